"""The kubernetes backend against the fake API server (real ``kubernetes_asyncio`` client over
HTTP) whose kubelet runs each pod through bubblewrap: same results as the local backend,
every Kubernetes failure class produced and classified, warm pools, orphan cleanup, 0 leaks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from environments.records import Outcome, RolloutSpec
from testkit.tasks import make_task
from training.orchestrator.kubernetes.manifest import LABEL_ROLLOUT
from training.orchestrator.local import LocalBackend
from training.orchestrator.scheduler import Scheduler, new_rollout_id, run_rollouts

CLAW = Path(__file__).resolve().parents[4] / "environments" / "claw" / "examples"


def spec(task: Path, harness: str, timeout: float = 120, **kw: object) -> RolloutSpec:
    return RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness=harness, timeout_sec=timeout, **kw)


def outcome(r) -> tuple:
    return (r.status, r.reward, r.error_kind)


async def compare_with_local(cluster, k8s_backend, tasks: list[Path], harnesses: tuple[str, ...]) -> list:
    """Run every (task, harness) on the fake cluster and on bubblewrap; same outcomes. The pods' results."""
    for task in tasks:
        await cluster.image(task)
    backend = k8s_backend()
    pairs = [(t, h) for t in tasks for h in harnesses]
    k8s = await run_rollouts(backend, [spec(t, h, task_id=t.name) for t, h in pairs], concurrency=4)
    local_backend = LocalBackend(isolation="bubblewrap")
    try:
        local = await run_rollouts(local_backend, [spec(t, h, task_id=t.name) for t, h in pairs], concurrency=2)
    finally:
        await local_backend.aclose()
    k8s_out = sorted((r.task_id, r.harness, outcome(r)) for r in k8s)
    local_out = sorted((r.task_id, r.harness, outcome(r)) for r in local)
    assert k8s_out == local_out, (k8s_out, local_out)
    for r in k8s:
        assert r.backend == "kubernetes" and r.isolation == "pod"
        assert r.status == Outcome.ok, r
        assert r.reward == (1.0 if r.harness == "oracle" else 0.0), r
        assert (Path(r.logs_dir) / "verifier" / "reward.txt").is_file()  # /logs came back from the pod
        assert "OPENFORGE_RESULT" in (Path(r.logs_dir).parent / "runner.log").read_text()
    assert await backend.live_sandboxes() == []
    return k8s


async def test_tiny_and_claw_task_match_local_backend(cluster, k8s_backend, tmp_path: Path) -> None:
    tasks = [make_task(tmp_path / "bank"), CLAW / "claw-gmail-invoice-reply"]
    await compare_with_local(cluster, k8s_backend, tasks, ("oracle", "noop"))


@pytest.mark.slow
async def test_every_claw_example_matches_local_backend(cluster, k8s_backend) -> None:
    tasks = sorted(p for p in CLAW.iterdir() if (p / "task.toml").is_file())
    await compare_with_local(cluster, k8s_backend, tasks, ("oracle", "noop"))


async def test_react_through_the_proxy_matches_local(cluster, k8s_backend, tmp_path: Path, sqlite_url: str) -> None:
    """The result comes from the proxy's finish record; with the pod's log lost it still does."""
    from testkit.fakes.vllm import FakeReply, FakeVLLM
    from training.engines.openai_compat import OpenAICompatEngine
    from training.proxy.server import ProxyServer

    task = make_task(tmp_path / "bank")
    await cluster.image(task)
    results = {}
    with FakeVLLM() as fake:
        engine = OpenAICompatEngine(fake.base_url, model=fake.model)
        async with ProxyServer(engine, db_url=sqlite_url) as proxy:
            client = proxy.client()
            local = LocalBackend(isolation="bubblewrap")
            k8s = k8s_backend(proxy=client)
            try:
                for name, backend, drop_logs in (("local", local, False), ("kubernetes", k8s, False),
                                                 ("kubernetes, log lost", k8s, True)):
                    cluster.executor.drop_logs = drop_logs
                    fake.script(FakeReply.tool("write_file", {"path": "out.txt", "content": "hello"}),
                                FakeReply.text("done"))
                    results[name] = await Scheduler(backend, proxy=client).run_one(spec(task, "react", model=fake.model))
            finally:
                await local.aclose()
                await client.aclose()
    for name, r in results.items():
        assert (r.status, r.reward, r.n_calls) == (Outcome.ok, 1.0, 2), (name, r)
    lost = results["kubernetes, log lost"]
    assert "OPENFORGE_RESULT" not in (Path(lost.logs_dir).parent / "runner.log").read_text()


async def test_failure_classes(cluster, k8s_backend, tmp_path: Path) -> None:
    task = make_task(tmp_path / "bank")
    await cluster.image(task)
    backend = k8s_backend()
    sleep = {"argv": ["sleep", "60"]}
    expected = {
        "oom": (Outcome.infra_error, "oom"),
        "deadline": (Outcome.timeout, "deadline_exceeded"),
        "image_pull": (Outcome.infra_error, "image_pull"),
        "evicted": (Outcome.infra_error, "evicted"),
        "unschedulable": (Outcome.infra_error, "unschedulable"),
        "node_lost": (Outcome.infra_error, "node_lost"),
    }
    specs = {}
    for failure in expected:
        s = spec(task, "command", timeout=60, harness_options=sleep)
        cluster.api.inject(f"{LABEL_ROLLOUT}={s.rollout_id}", failure)
        specs[s.rollout_id] = (failure, s)
    results = await run_rollouts(backend, [s for _f, s in specs.values()], concurrency=6)
    got = {specs[r.rollout_id][0]: (r.status, r.error_kind) for r in results}
    assert got == expected, {f: (r.status, r.error_kind, r.error) for f, r in
                             ((specs[r.rollout_id][0], r) for r in results)}
    for r in results:
        assert not r.trainable and r.seconds < 30, r
    node_lost = next(r for r in results if specs[r.rollout_id][0] == "node_lost")
    assert "node lost" in (node_lost.error or "")
    unschedulable = next(r for r in results if specs[r.rollout_id][0] == "unschedulable")
    # The scheduler's reason once: its FailedScheduling event says what the condition says.
    assert (unschedulable.error or "").count("Insufficient memory") == 1, unschedulable.error
    assert await backend.live_sandboxes() == []


async def test_crash_without_report_is_harness_crash(cluster, k8s_backend, tmp_path: Path) -> None:
    task = make_task(tmp_path / "bank")
    await cluster.image(task)
    r = await Scheduler(k8s_backend()).run_one(
        spec(task, "command", harness_options={"argv": ["bash", "-c", "echo boom >&2; exit 3"]}))
    assert (r.status, r.error_kind) == (Outcome.infra_error, "harness_crash")


async def test_unknown_image_is_an_image_pull_error(cluster, k8s_backend, tmp_path: Path) -> None:
    task = make_task(tmp_path / "bank")
    await cluster.image(task)
    cluster.api.call(lambda _s, k: setattr(k, "pullable", lambda image: "openforge-task" not in image))
    r = await Scheduler(k8s_backend()).run_one(spec(task, "noop"))
    assert (r.status, r.error_kind) == (Outcome.infra_error, "image_pull"), r
    assert "ImagePullBackOff" in r.error or "ErrImagePull" in r.error
    # The kubelet's own words come along (from the pod's Warning events).
    assert "| events: " in r.error and "Failed: Failed to pull image" in r.error, r.error


async def test_warm_pool_serves_the_claims_and_refills(cluster, k8s_backend, tmp_path: Path) -> None:
    task = make_task(tmp_path / "bank")
    await cluster.image(task)
    backend = k8s_backend(warm_pool=2)
    assert await backend.prewarm([str(task)], timeout=60)
    results = await run_rollouts(backend, [spec(task, "oracle"), spec(task, "noop")], concurrency=2)
    assert sorted(outcome(r) for r in results) == [(Outcome.ok, 0.0, None), (Outcome.ok, 1.0, None)]
    assert backend.stats["warm_claims"] == 2 and backend.stats["cold_starts"] == 0
    for r in results:  # how fast a claim is: bench/k8s_scale.py (a figure, not a pass/fail here)
        assert r.timings["warm"] == 1.0 and r.timings["requested_to_running"] >= 0.0, r.timings
    # the pool refilled behind the claims; claimed pods are gone
    for _ in range(100):
        pool = next(iter(backend._pools.values()))
        if len(pool.idle) == 2:
            break
        await asyncio.sleep(0.1)
    assert len(pool.idle) == 2
    assert await backend.live_sandboxes() == []


async def test_orphans_of_an_earlier_run_are_removed(cluster, k8s_backend, tmp_path: Path) -> None:
    task = make_task(tmp_path / "bank")
    await cluster.image(task)
    first = k8s_backend(instance="ci")
    handle = await first.start(spec(task, "command", harness_options={"argv": ["sleep", "60"]}))
    pod = handle.state["pod"].name
    assert pod in cluster.objects()["Pod"]
    other = k8s_backend(instance="someone-else")
    await other.prewarm([])  # setup of another instance: leaves it alone
    assert pod in cluster.objects()["Pod"] and other.stats["orphans_removed"] == 0
    second = k8s_backend(instance="ci")  # "the orchestrator restarted"
    await second.prewarm([])
    assert second.stats["orphans_removed"] == 1
    for _ in range(50):
        if pod not in cluster.objects()["Pod"]:
            break
        await asyncio.sleep(0.1)
    objects = cluster.objects()
    assert pod not in objects["Pod"] and pod not in objects["Secret"]
    assert f"openforge-run-{first.run_id}" not in objects["ConfigMap"]
    await first.cleanup(handle)


async def test_hanging_harness_times_out_and_its_pod_is_deleted(cluster, k8s_backend, tmp_path: Path) -> None:
    import time

    task = make_task(tmp_path / "bank")
    await cluster.image(task)
    backend = k8s_backend()
    hang = spec(task, "command", timeout=4, harness_options={"argv": ["bash", "-c", "setsid sleep 300 & sleep 300"]})
    t0 = time.monotonic()
    r = await Scheduler(backend).run_one(hang)
    assert (r.status, r.error_kind) == (Outcome.timeout, "deadline_exceeded"), r
    assert time.monotonic() - t0 < 4 + 8
    assert await backend.live_sandboxes() == []


async def test_warm_pool_smaller_than_demand(cluster, k8s_backend, tmp_path: Path) -> None:
    task = make_task(tmp_path / "bank")
    await cluster.image(task)
    backend = k8s_backend(warm_pool=1)
    assert await backend.prewarm([str(task)], timeout=60)
    results = await run_rollouts(backend, [spec(task, "oracle") for _ in range(4)], concurrency=4)
    assert [outcome(r) for r in results] == [(Outcome.ok, 1.0, None)] * 4
    s = backend.stats
    assert s["warm_claims"] >= 1 and s["warm_claims"] + s["warm_waits"] + s["cold_starts"] == 4, s


async def test_missing_namespace_is_a_clear_start_failure(cluster, k8s_backend, tmp_path: Path) -> None:
    task = make_task(tmp_path / "bank")
    r = await Scheduler(k8s_backend(namespace="no-such-ns")).run_one(spec(task, "noop"))
    assert (r.status, r.error_kind) == (Outcome.infra_error, "start_failed")
    assert "no-such-ns" in r.error and "exist" in r.error, r.error


@pytest.mark.slow
def test_scale_bench_quick_run(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    bench = Path(__file__).resolve().parents[4] / "bench" / "k8s_scale.py"
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(bench), "--n", "40", "--concurrency", "10", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    for mode in ("cold", "warm"):
        res = doc["results"][mode]
        assert res["statuses"] == {"ok": 40} and res["leaked_pods"] == 0 and res["leaked_secrets"] == 0
        assert res["cpu_ms_per_rollout"] > 0 and res["p99_requested_to_running_ms"] > 0
    assert doc["results"]["warm"]["warm_claims"] > 0


async def test_network_policy_names_the_control_endpoint_and_the_proxy(cluster, k8s_backend, tmp_path: Path) -> None:
    from testkit.fakes.kubernetes.resources import BY_KIND
    from training.orchestrator.kubernetes.manifest import LABEL_RUN

    task = make_task(tmp_path / "bank")
    await cluster.image(task)
    backend = k8s_backend()

    def policy() -> dict:
        return cluster.api.call(lambda s, _k: s.peek(BY_KIND["NetworkPolicy"], "openforge-test", backend.policy_name))

    await backend.prewarm([])
    spec_ = policy()["spec"]
    assert spec_["podSelector"]["matchLabels"][LABEL_RUN] == backend.run_id
    assert spec_["ingress"] == [] and set(spec_["policyTypes"]) == {"Ingress", "Egress"}
    assert [(r["to"][0]["ipBlock"]["cidr"], r["ports"][0]["port"]) for r in spec_["egress"]] == [
        ("127.0.0.1/32", backend.control.port)]
    # a rollout whose proxy is elsewhere widens the policy to that proxy, and only to it
    r = await Scheduler(backend).run_one(spec(task, "noop", base_url="http://127.0.0.2:1/rollouts/t/v1", token="t"))
    assert r.status == Outcome.ok
    cidrs = sorted((rule["to"][0]["ipBlock"]["cidr"], rule["ports"][0]["port"]) for rule in policy()["spec"]["egress"])
    assert cidrs == sorted([("127.0.0.1/32", backend.control.port), ("127.0.0.2/32", 1)])


async def test_separate_verifier_mode_on_the_fake_cluster(cluster, k8s_backend, tmp_path: Path) -> None:
    """``environment_mode = "separate"``: the verifier pod is a fresh one over the artifacts.
    Its image (verifier environment + artifacts) only exists once the agent is done: on a real
    cluster that needs ``image_source = "build"``; here the fake registers it as it starts."""
    from tests.training.orchestrator.test_separate_verifier import separate_task

    task = separate_task(tmp_path / "bank")
    await cluster.image(task)
    backend = k8s_backend()
    start = backend.start

    async def start_with_image(s):
        await cluster.image(Path(s.task_dir))
        return await start(s)

    backend.start = start_with_image
    results = {r.harness: r for r in await run_rollouts(backend, [spec(task, "oracle"), spec(task, "noop")],
                                                        concurrency=2)}
    assert (results["oracle"].status, results["oracle"].reward) == (Outcome.ok, 1.0), results["oracle"]
    assert (results["noop"].status, results["noop"].reward) == (Outcome.ok, 0.0), results["noop"]
