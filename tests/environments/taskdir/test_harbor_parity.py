"""Harbor-shaped task dirs (tests/fixtures/harbor, one per row of issue 16, written from
Harbor 0.26's task schema): each loads with Harbor's meaning or is refused in one line that
names the field; where the real Harbor is installed (.venv-harbor), our parse is compared
with Harbor's own parse of the same file, field by field, and what we write back is
re-parsed by Harbor to the same config."""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

from environments.taskdir import TaskConfig, import_task, load_task, validate_task
from environments.taskdir.model import (
    DEFAULT_CPUS,
    DEFAULT_MEMORY_MB,
    DEFAULT_STORAGE_MB,
)
from environments.taskdir.real_harbor import (
    HarborUnavailable,
    harbor_parse,
    harbor_python,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "harbor"
ALL = sorted(p.name for p in FIXTURES.iterdir() if (p / "task.toml").is_file())
#: Refused by us, with the line's field and reason.
REFUSED = {
    "memory-conflict": ("task.toml: environment", "memory = '4G' (4096 MB) conflicts with memory_mb = 2048"),
    "windows": ("task.toml: environment.os", "'windows' tasks are not supported"),
}
ACCEPTED = [name for name in ALL if name not in REFUSED]


def _cfg(name: str) -> TaskConfig:
    return load_task(FIXTURES / name).config


# -- our meaning, row by row ----------------------------------------------------------------


def test_every_fixture_is_valid_or_refused_in_one_line() -> None:
    for name in ALL:
        lines = [str(p) for p in validate_task(FIXTURES / name)]
        if name in REFUSED:
            field, why = REFUSED[name]
            assert len(lines) == 1 and f": {field}: " in lines[0] and why in lines[0], lines
        else:
            assert lines == [], (name, lines)


@pytest.mark.parametrize("name", ["schema-1-2", "schema-1-3", "schema-1-4", "schema-free-text"])
def test_schema_version_is_free_text(name: str) -> None:
    raw = tomllib.loads((FIXTURES / name / "task.toml").read_text())
    assert _cfg(name).schema_version == raw["schema_version"]


def test_version_is_the_old_name_of_schema_version() -> None:
    assert _cfg("tb2-memory-storage").schema_version == "1.0"
    assert _cfg("hello-world").schema_version == "1.0"


def test_metadata_is_free_form_and_never_ours() -> None:
    cfg = _cfg("metadata-free-form")
    assert cfg.metadata["difficulty"] == 3 and cfg.metadata["purpose"] == "eval" and cfg.metadata["services"] == "db"
    assert cfg.metadata["provenance"] == {"origin": "terminal-bench"}
    assert cfg.difficulty == "3" and cfg.openforge.purpose == "rl" and cfg.openforge.services == []
    foreign = _cfg("foreign-services")
    assert foreign.metadata["services"] == ["gmail", "db"] and foreign.openforge.services == []
    assert foreign.openforge.domain is None


def test_harbor_defaults() -> None:
    cfg = _cfg("defaults-omitted")
    assert cfg.verifier.timeout_sec == 600.0 and cfg.agent.timeout_sec is None
    assert cfg.environment.build_timeout_sec == 600.0 and cfg.environment.network_mode == "public"
    assert cfg.verifier.mode == "shared"


def test_memory_and_storage_strings_become_mb() -> None:
    env = _cfg("tb2-memory-storage").environment
    assert (env.memory_mb, env.storage_mb) == (4096, 10240)


def test_image_only_compose_and_no_exec_bit_tasks_load() -> None:
    image = load_task(FIXTURES / "image-only")
    assert image.docker_image == "python:3.12-slim" and not image.dockerfile.is_file()
    assert load_task(FIXTURES / "compose").compose_file is not None
    no_exec = FIXTURES / "no-exec-bit" / "tests" / "test.sh"
    assert not os.access(no_exec, os.X_OK) and validate_task(no_exec.parents[1]) == []


def test_multi_step_task_loads_with_its_steps() -> None:
    cfg = _cfg("multi-step")
    assert [s.name for s in cfg.steps or []] == ["write", "append"] and cfg.multi_step_reward_strategy == "mean"
    assert cfg.steps[0].agent.timeout_sec == 120.0 and cfg.steps[0].min_reward == 1.0
    assert cfg.steps[1].verifier.timeout_sec == 60.0


def test_missing_step_dir_is_one_line(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "multi-step", tmp_path / "t")
    shutil.rmtree(tmp_path / "t" / "steps" / "append")
    assert [str(p) for p in validate_task(tmp_path / "t")] == [
        f"{tmp_path / 't'}: steps/append: missing (declared in [[steps]])"]


def test_env_tables_and_runtime_fields_are_read() -> None:
    cfg = _cfg("env-and-runtime-fields")
    assert cfg.verifier.env == {"EXPECTED": "hello", "VERIFIER_TOKEN": "${OPENFORGE_TEST_VERIFIER_TOKEN:-verifier-default}"}
    assert cfg.solution.env == {"GREETING": "${OPENFORGE_TEST_GREETING:-hello}"}
    assert cfg.environment.env == {"APP_MODE": "${OPENFORGE_TEST_APP_MODE:-test}"}
    assert (cfg.agent.user, cfg.verifier.user, cfg.verifier.network_mode) == ("agent", "root", "no-network")
    assert cfg.environment.network_mode == "no-network"  # allow_internet = false
    assert (cfg.environment.gpus, cfg.environment.gpu_types, cfg.environment.workdir) == (1, ["H100"], "/app")
    assert cfg.environment.healthcheck is not None and cfg.environment.healthcheck.retries == 2
    assert cfg.artifacts[0] == "/app/out.txt" and cfg.artifacts[1]["destination"] == "agent-logs"


def test_unknown_fields_are_written_back_unchanged(tmp_path: Path) -> None:
    src = tomllib.loads((FIXTURES / "unknown-fields" / "task.toml").read_text())
    task = import_task(FIXTURES / "unknown-fields", tmp_path / "bank")
    out = tomllib.loads((task.path / "task.toml").read_text())
    for table in ("task", "verifier", "agent", "environment", "extension_table"):
        for key, value in src[table].items():
            assert out[table][key] == value, (table, key)
    assert out["custom_root"] == "kept" and out["source"] == src["source"]
    assert out["metadata"]["openforge"]["content_sha"] == task.config.openforge.content_sha


def test_import_keeps_foreign_metadata_and_adds_ours_in_its_table(tmp_path: Path) -> None:
    task = import_task(FIXTURES / "metadata-free-form", tmp_path / "bank", purpose="sft")
    out = tomllib.loads((task.path / "task.toml").read_text())
    meta = dict(out["metadata"])
    ours = meta.pop("openforge")
    assert meta == tomllib.loads((FIXTURES / "metadata-free-form" / "task.toml").read_text())["metadata"]
    assert ours["purpose"] == "sft" and "services" not in ours  # the foreign "services" stayed theirs
    assert load_task(task.path).config.openforge.purpose == "sft"
    assert os.access(task.path / "tests" / "test.sh", os.X_OK)


def test_a_task_without_task_table_is_written_back_without_one(tmp_path: Path) -> None:
    task = import_task(FIXTURES / "tb2-memory-storage", tmp_path / "bank")
    out = tomllib.loads((task.path / "task.toml").read_text())
    assert "task" not in out and out["schema_version"] == "1.0" and "version" not in out
    assert out["environment"]["memory_mb"] == 4096 and "memory" not in out["environment"]
    assert task.config.task.name == "tb2-memory-storage"


# -- against the real Harbor ----------------------------------------------------------------


@pytest.fixture(scope="module")
def harbor() -> Path:
    try:
        return harbor_python()
    except HarborUnavailable as exc:
        print(f"SKIP reason: {exc}")  # shown with -rs / -s
        pytest.skip(str(exc))


def _artifact(entry: Any) -> dict[str, Any]:
    doc = {"source": entry} if isinstance(entry, str) else dict(entry)
    return {"source": doc["source"], "destination": doc.get("destination"), "exclude": doc.get("exclude", []),
            "service": doc.get("service")}


def _resources(ours: Any, theirs: dict[str, Any]) -> None:
    for key, default in (("cpus", DEFAULT_CPUS), ("memory_mb", DEFAULT_MEMORY_MB), ("storage_mb", DEFAULT_STORAGE_MB)):
        want = default if theirs[key] is None else theirs[key]
        assert getattr(ours, key) == want, key


def compare(ours: TaskConfig, theirs: dict[str, Any], *, dir_name: str) -> None:
    """Our parse vs Harbor's ``model_dump(mode="json")``, field by field."""
    assert ours.schema_version == theirs["schema_version"]
    if theirs["task"] is None:
        assert ours.task.name == dir_name
    else:
        for key in ("name", "version", "description", "keywords"):
            assert getattr(ours.task, key) == theirs["task"][key], f"task.{key}"
        assert [a.name for a in ours.task.authors] == [a["name"] for a in theirs["task"]["authors"]]
    assert ours.metadata == {k: v for k, v in theirs["metadata"].items() if k != "openforge"}
    for key in ("timeout_sec", "user", "network_mode", "allowed_hosts"):
        assert getattr(ours.agent, key) == theirs["agent"][key], f"agent.{key}"
    for key in ("timeout_sec", "env", "user", "environment_mode", "network_mode", "allowed_hosts"):
        assert getattr(ours.verifier, key) == theirs["verifier"][key], f"verifier.{key}"
    env, their_env = ours.environment, theirs["environment"]
    for key in ("build_timeout_sec", "docker_image", "os", "gpus", "gpu_types", "env", "skills_dir", "workdir",
                "network_mode", "allowed_hosts"):
        assert getattr(env, key) == their_env[key], f"environment.{key}"
    _resources(env, their_env)
    hc = env.healthcheck.model_dump() if env.healthcheck else None
    assert hc == their_env["healthcheck"], "environment.healthcheck"
    assert ours.solution.env == theirs["solution"]["env"]
    assert ours.source == theirs["source"] and ours.multi_step_reward_strategy == theirs["multi_step_reward_strategy"]
    assert [_artifact(a) for a in ours.artifacts] == [_artifact(a) for a in theirs["artifacts"]]
    their_steps = theirs["steps"] or []
    assert [s.name for s in ours.steps or []] == [s["name"] for s in their_steps]
    for mine, step in zip(ours.steps or [], their_steps, strict=True):
        assert mine.agent.timeout_sec == step["agent"]["timeout_sec"] and mine.min_reward == step["min_reward"]
        assert mine.verifier.timeout_sec == step["verifier"]["timeout_sec"]


def test_harbor_accepts_and_refuses_what_we_do(harbor: Path) -> None:
    parsed = harbor_parse([FIXTURES / n for n in ALL], python=harbor)
    for name in ALL:
        theirs = parsed[str(FIXTURES / name)]
        if name == "memory-conflict":
            assert not theirs["ok"] and "memory" in theirs["error"] and "memory_mb" in theirs["error"]
        elif name == "bad-name":  # Harbor insists on org/name; we read it and export it as such
            assert not theirs["ok"] and "org/name" in theirs["error"]
        else:
            assert theirs["ok"], (name, theirs.get("error"))
            assert theirs["valid_dir"] == (name != "windows"), name


@pytest.mark.parametrize("name", [n for n in ACCEPTED if n != "bad-name"])
def test_our_parse_equals_harbors(harbor: Path, name: str) -> None:
    theirs = harbor_parse([FIXTURES / name], python=harbor)[str(FIXTURES / name)]
    compare(_cfg(name), theirs["config"], dir_name=name)


def test_what_we_write_back_harbor_reads_the_same(harbor: Path, tmp_path: Path) -> None:
    names = [n for n in ACCEPTED if n != "bad-name"]
    copies = [import_task(FIXTURES / n, tmp_path / "bank").path for n in names]
    before = harbor_parse([FIXTURES / n for n in names], python=harbor)
    after = harbor_parse(copies, python=harbor)
    for name, copy in zip(names, copies, strict=True):
        theirs, again = before[str(FIXTURES / name)]["config"], after[str(copy)]
        assert again["ok"] and again["valid_dir"], (name, again.get("error"))
        meta = dict(again["config"]["metadata"])
        assert "content_sha" in meta.pop("openforge")
        assert {**again["config"], "metadata": meta} == theirs, name
