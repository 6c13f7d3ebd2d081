"""Deployments that fit the infrastructure: prefect.yaml (process pools) and its Kubernetes
twin prefect-kubernetes.yaml put CPU work and training on separate pools; the Kubernetes
file works inside a pod (no deploying host's path) and its job variables fit the pools'
base job templates; the documented deploy commands, run as written against a real
``prefect server``, register every deployment on its kubernetes pool with its job variables."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from flows.deploy import CPU_POOL, GPU_POOL, with_pools
from flows.k8s_pools import DATA_MOUNT, base_job_template
from tests.flows.test_deployment_e2e import _free_port, _stop, _wait_healthy

REPO = Path(__file__).resolve().parents[2]
PROCESS_FILE = REPO / "prefect.yaml"
K8S_FILE = REPO / "prefect-kubernetes.yaml"
DOC = REPO / "configs" / "k8s" / "prefect-kubernetes.md"
TRAINING_FLOWS = {"flows/learning.py:rl_flow", "flows/learning.py:sft_flow", "flows/pipeline.py:pipeline_flow"}
#: Flows of the commands that run them from the UI too (the bank's import and verify, CPU work).
BANK_FLOWS = {"flows/bank.py:tasks_import_flow", "flows/bank.py:tasks_verify_flow"}
K8S_POOLS = {"cpu": "openforge-k8s-cpu", "gpu": "openforge-k8s-gpu"}


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def _kind_of(deployment: dict[str, Any]) -> str:
    return "gpu" if deployment["entrypoint"] in TRAINING_FLOWS else "cpu"


def deploy_block() -> str:
    """The bash block of the doc's step 3 (the one the marker comment names)."""
    text = DOC.read_text()
    marker = text.index("<!-- deploy-commands:")
    block = re.search(r"```bash\n(.*?)```", text[marker:], re.DOTALL)
    assert block, "no bash block after the deploy-commands marker"
    return "\n".join(line.strip() for line in block.group(1).splitlines())


def test_both_files_declare_the_same_deployments() -> None:
    """prefect.yaml has no include: the two files repeat the deployments, kept equal here."""
    def key(d: dict[str, Any]) -> tuple:
        return (d["entrypoint"], d["name"], repr(d.get("parameters")), repr(d.get("schedules")),
                repr(d.get("concurrency_limit")))

    process, k8s = _load(PROCESS_FILE)["deployments"], _load(K8S_FILE)["deployments"]
    assert sorted(map(key, process)) == sorted(map(key, k8s))
    assert {d["entrypoint"] for d in process} >= TRAINING_FLOWS | {"flows/synthesize.py:synthesize_flow",
                                                                   "flows/learning.py:evaluate_flow"} | BANK_FLOWS


def test_every_deployments_parameters_are_valid_values_of_its_flows_typed_model() -> None:
    """Each entrypoint loads as a flow taking one typed ``params`` model (what the CLI's command
    builds from its options), and the parameters a deployment sets are valid values of it."""
    import typing

    from prefect.flows import load_flow_from_entrypoint
    from pydantic import BaseModel

    for d in _load(PROCESS_FILE)["deployments"]:
        flow = load_flow_from_entrypoint(str(REPO / d["entrypoint"]))
        hints = {k: v for k, v in typing.get_type_hints(flow.fn).items() if k != "return"}
        assert list(hints) == ["params"] and issubclass(hints["params"], BaseModel), d["entrypoint"]
        given = (d.get("parameters") or {}).get("params", {})
        required = {k for k, f in hints["params"].model_fields.items() if f.is_required()}
        if not required - set(given):  # a deployment that leaves a required field to the run form
            hints["params"].model_validate(given)


def test_training_on_the_gpu_pool_the_rest_on_the_cpu_pool() -> None:
    for path, pools in ((PROCESS_FILE, {"cpu": CPU_POOL, "gpu": GPU_POOL}), (K8S_FILE, K8S_POOLS)):
        for d in _load(path)["deployments"]:
            assert d["work_pool"]["name"] == pools[_kind_of(d)], (path.name, d["entrypoint"], d["name"])


def test_kubernetes_file_pulls_inside_the_pod_and_its_job_variables_fit_the_pools() -> None:
    config = _load(K8S_FILE)
    text = K8S_FILE.read_text()
    assert "$PWD" not in text  # the deploying host's folder means nothing inside a pod
    assert config["pull"] == [{"prefect.deployments.steps.set_working_directory": {"directory": "/opt/openforge"}}]
    exported = set(re.findall(r"^export (\w+)=", deploy_block(), re.MULTILINE))
    for d in config["deployments"]:
        job = d["work_pool"]["job_variables"]
        placeholders = set(re.findall(r"{{\s*\$(\w+)\s*}}", repr(job)))
        assert placeholders <= exported, f"{d['name']}: {placeholders - exported} not exported by the doc"
        schema = base_job_template(_kind_of(d))["variables"]
        jsonschema.validate({k: v for k, v in job.items() if "{{" not in str(v)}, schema)  # names and types
        assert set(job) <= set(schema["properties"]), set(job) - set(schema["properties"])
        assert job["env"]["OPENFORGE_HOME"] == DATA_MOUNT
        assert ("gpu_limit" in job) == (_kind_of(d) == "gpu")


def test_pool_templates_add_the_data_volume_secret_env_and_gpus() -> None:
    for kind in ("cpu", "gpu"):
        template = base_job_template(kind)  # type: ignore[arg-type]
        pod = template["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]
        container = pod["containers"][0]
        assert {"name": "openforge-data", "mountPath": DATA_MOUNT} in container["volumeMounts"]
        assert container["envFrom"] == [{"secretRef": {"name": "{{ env_secret }}"}}]
        limits = container["resources"]["limits"]
        assert (limits.get("nvidia.com/gpu") == "{{ gpu_limit }}") == (kind == "gpu")
        assert ("gpu_limit" in template["variables"]["properties"]) == (kind == "gpu")
    with pytest.raises(ValueError, match="cpu or gpu"):
        base_job_template("tpu")  # type: ignore[arg-type]


def test_documented_commands_never_pass_pool_options_to_deploy_all() -> None:
    for line in DOC.read_text().splitlines():
        if "deploy" in line and "--all" in line:
            assert "--pool" not in line and "--job-variable" not in line, line


def test_other_pool_names_rename_every_deployment() -> None:
    renamed = with_pools(_load(PROCESS_FILE), {CPU_POOL: "cpu-a", GPU_POOL: "gpu-b"})
    assert "definitions" not in renamed
    assert {d["work_pool"]["name"] for d in renamed["deployments"]} == {"cpu-a", "gpu-b"}
    assert {_kind_of(d) for d in renamed["deployments"] if d["work_pool"]["name"] == "gpu-b"} == {"gpu"}


@contextmanager
def prefect_server(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A real ``prefect server`` on a free port; yields the environment that points at it."""
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = os.environ.copy()
    env.update({
        "PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_API_URL": api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",  # the venv active
    })
    server = None
    try:
        server = subprocess.Popen([str(Path(sys.executable).with_name("prefect")), "server", "start", "--host",
                                   "127.0.0.1", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        _wait_healthy(api, server)
        yield env
    finally:
        _stop(server)
        shutil.rmtree(tmp_path / "prefect-home", ignore_errors=True)


def read_back(api: str) -> tuple[dict[str, Any], list[Any], dict[Any, str]]:
    """Work pools, deployments and flow names, through the Prefect client."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as client:
        pools = {p.name: p for p in client.read_work_pools()}
        return pools, client.read_deployments(), {f.id: f.name for f in client.read_flows()}


def _flow_kind(flow: str) -> str:
    return "gpu" if flow in {"rl-train", "sft-train", "pipeline"} else "cpu"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_documented_kubernetes_deploy_runs_as_written_on_a_real_server(tmp_path: Path) -> None:
    block = deploy_block()
    with prefect_server(tmp_path) as env:
        ran = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=600, check=False)
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
        pools, deployments, flows = read_back(env["PREFECT_API_URL"])
    image = re.search(r"^export OPENFORGE_IMAGE=(\S+)", block, re.MULTILINE).group(1)

    for kind, name in K8S_POOLS.items():
        assert pools[name].type == "kubernetes"
        container = pools[name].base_job_template["job_configuration"]["job_manifest"]["spec"]["template"]["spec"][
            "containers"][0]
        assert ("nvidia.com/gpu" in container["resources"]["limits"]) == (kind == "gpu")
    assert len(deployments) == len(_load(K8S_FILE)["deployments"])
    seen = set()
    for dep in deployments:
        flow = flows[dep.flow_id]
        kind = _flow_kind(flow)
        assert dep.work_pool_name == K8S_POOLS[kind], (flow, dep.name, dep.work_pool_name)
        job = dep.job_variables
        assert job["image"] == image and job["namespace"] == "openforge", job
        # the data dir on the shared volume; the run's proxy on the pod IP, on a port the NetworkPolicy opens
        assert job["env"] == {"OPENFORGE_HOME": DATA_MOUNT, "OPENFORGE_PROXY_HOST": "0.0.0.0",
                              "OPENFORGE_PROXY_PORTS": "9000-9015"}
        assert job["service_account_name"] == "openforge-flows"
        assert (job.get("gpu_limit") == 1) == (kind == "gpu"), (flow, job)
        assert "{{" not in repr(job)
        assert dep.pull_steps == [{"prefect.deployments.steps.set_working_directory":
                                   {"directory": "/opt/openforge"}}]
        seen.add(f"{flow}/{dep.name}")
    assert {"rl-train/claw", "sft-train/local", "pipeline/local", "synthesize/claw-nightly", "distill/claw",
            "evaluate/claw", "tasks-import/bank", "tasks-verify/bank"} <= seen


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_deploy_all_puts_prefect_yaml_on_the_named_process_pools_with_the_limits(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.deploy import deploy_all

    with prefect_server(tmp_path) as env:
        monkeypatch.setenv("PREFECT_API_URL", env["PREFECT_API_URL"])
        monkeypatch.setenv("PREFECT_HOME", env["PREFECT_HOME"])
        monkeypatch.chdir(tmp_path)  # the pull step must still name the checkout
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}):
            lines = deploy_all(REPO, "cpu-x", "gpu-y")
        pools, deployments, flows = read_back(env["PREFECT_API_URL"])
    assert "work pool cpu-x: created" in lines and "work pool gpu-y: created" in lines
    assert "limit anthropic-api-rate (rate 0.5/s, burst 4): created" in lines, lines
    assert pools["cpu-x"].type == pools["gpu-y"].type == "process"
    assert len(deployments) == len(_load(PROCESS_FILE)["deployments"])
    for dep in deployments:
        assert dep.work_pool_name == {"cpu": "cpu-x", "gpu": "gpu-y"}[_flow_kind(flows[dep.flow_id])]
        assert dep.pull_steps == [{"prefect.deployments.steps.set_working_directory": {"directory": str(REPO)}}]
