"""Harbor datasets in and out of the bank: a dataset folder and a registry.json listing
import as ``imported``; ``verify_tasks`` (oracle 1, no-op 0 on the real local backend)
promotes them; ``export_tasks`` writes dirs the real Harbor accepts (where installed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from environments.bank import (
    export_tasks,
    import_tasks,
    list_tasks,
    show_task,
)
from environments.taskdir.real_harbor import (
    HarborUnavailable,
    harbor_parse,
    harbor_python,
)
from training.orchestrator.bank_checks import verify_tasks

FIXTURES = Path(__file__).parents[1] / "fixtures" / "harbor"
#: Fixtures the local backend can run (Dockerfile-based, one step, Linux).
LOCAL = ["hello-world", "no-exec-bit", "reward-json-metrics", "metadata-free-form", "tb2-memory-storage"]


def _dataset(root: Path, names: list[str]) -> Path:
    for name in names:
        shutil.copytree(FIXTURES / name, root / "tasks" / name)
    return root


def test_dataset_folder_imports_every_task_as_imported(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds", [*LOCAL, "image-only", "compose", "multi-step", "windows", "memory-conflict"])
    imported, problems = import_tasks([ds])
    assert sorted(r["id"] for r in imported) == sorted([*LOCAL, "image-only", "compose", "multi-step"])
    lines = [str(p) for p in problems]
    assert len(lines) == 2 and any("windows: task.toml: environment.os" in ln for ln in lines), lines
    assert any("memory-conflict: task.toml: environment: memory = '4G'" in ln for ln in lines), lines
    assert {r["status"] for r in list_tasks()} == {"imported"}
    assert show_task("metadata-free-form")["difficulty"] == "3"  # free-form metadata, shown as text


def test_registry_listing_of_local_paths(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds", ["hello-world", "no-exec-bit"])
    listing = ds / "registry.json"
    listing.write_text(json.dumps([{"name": "mine", "version": "1.0", "tasks": [
        {"name": "hello-world", "path": "tasks/hello-world"}, {"name": "no-exec", "path": "tasks/no-exec-bit"},
        {"name": "remote", "git_url": "https://example.com/x.git"}]}]))
    imported, problems = import_tasks([listing])
    assert [r["id"] for r in imported] == ["hello-world", "no-exec-bit"]
    assert [str(p) for p in problems] == [f"{listing}: [0].tasks[2].path: missing (only local paths import)"]


def test_verify_promotes_tasks_whose_oracle_scores_1_and_noop_0(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds", LOCAL)
    broken = ds / "tasks" / "broken-oracle"
    shutil.copytree(FIXTURES / "hello-world", broken)
    (broken / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    import_tasks([ds])
    rows = {r["id"]: r for r in verify_tasks(backend="local")}
    for name in LOCAL:
        assert rows[name]["passed"] and (rows[name]["oracle"], rows[name]["noop"]) == (1.0, 0.0), rows[name]
    assert not rows["broken-oracle"]["passed"] and "oracle: reward 0.0 (want 1)" in rows["broken-oracle"]["error"]
    status = {r["id"]: r["status"] for r in list_tasks()}
    assert status == {**{n: "verified" for n in LOCAL}, "broken-oracle": "imported"}
    checks = show_task("hello-world")["checks"]
    assert [(c["kind"], c["passed"], c["reward"]) for c in checks] == [("oracle", True, 1.0), ("noop", True, 0.0)]


def test_export_writes_what_harbor_accepts(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds", ["hello-world", "bad-name", "unknown-fields", "multi-step", "image-only"])
    import_tasks([ds])
    rows = export_tasks(tmp_path / "out", status="imported")
    names = {r["id"]: r["name"] for r in rows}
    assert names["bad-name"] == "openforge/no-org-name" and names["hello-world"] == "openforge/hello-world"
    assert names["unknown-fields"] == "acme/unknown-fields"
    try:
        python = harbor_python()
    except HarborUnavailable as exc:
        print(f"SKIP reason: {exc}")
        pytest.skip(str(exc))
    parsed = harbor_parse([r["dir"] for r in rows], python=python)
    for row in rows:
        assert parsed[row["dir"]]["ok"] and parsed[row["dir"]]["valid_dir"], (row, parsed[row["dir"]])


def test_reward_json_metrics_are_kept_per_rollout(tmp_path: Path) -> None:
    import asyncio

    from sqlalchemy import select

    from openforge.settings import get_settings
    from storage.db import make_engine, session_scope
    from storage.models import Rollout
    from training.orchestrator.single import rollout_once

    doc = asyncio.run(rollout_once(str(FIXTURES / "reward-json-metrics"), "oracle", backend="local"))
    assert doc["status"] == "ok" and doc["reward"] == 1.0 and doc["metrics"] == {"exists": 1.0, "content": 1.0}
    engine = make_engine(get_settings().db_url)
    try:
        with session_scope(engine) as s:
            row = s.scalars(select(Rollout).where(Rollout.id == doc["rollout_id"])).one()
            assert row.meta["metrics"] == {"exists": 1.0, "content": 1.0} and row.reward == 1.0
    finally:
        engine.dispose()
