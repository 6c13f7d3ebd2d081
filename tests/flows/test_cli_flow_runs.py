"""Every command that does work is a Prefect flow run (issue 19, "one front door"): ``init``,
``tasks import|verify|export``, ``rollout``, ``export-atif`` and ``model prepare``, invoked
through the CLI's entry point (the Typer app), each leave one completed flow run on the Prefect
API (the test harness's server: what the embedded API is for a user) whose ``params`` are the
flow's typed parameters built from the command's options, the same the deployment takes.
``proxy serve`` and ``deploy`` are not flow runs (docs/CONTRACTS.md says why)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from cli.app import app
from flows.params import (
    ExportAtifParams,
    InitParams,
    ModelPrepareParams,
    RolloutParams,
    TasksExportParams,
    TasksImportParams,
    TasksVerifyParams,
)
from testkit.tasks import make_task


def _flow_runs(name: str) -> list[Any]:
    """The flow runs of the flow ``name`` on the configured Prefect API, oldest first."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.client.schemas.sorting import FlowRunSort

    async def read() -> list[Any]:
        async with get_client() as client:
            return await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[name])),
                                               sort=FlowRunSort.START_TIME_ASC)

    return asyncio.run(read())


def _invoke(args: list[str]) -> Any:
    res = CliRunner().invoke(app, args)
    assert "Traceback" not in res.output, res.output
    return res


def _last_json(res: Any) -> Any:
    return json.loads(res.stdout.strip().splitlines()[-1])


def _one_completed_run(flow: str, expected: BaseModel) -> Any:
    runs = [r for r in _flow_runs(flow) if r.parameters.get("params") == expected.model_dump(mode="json")]
    assert len(runs) == 1, (flow, [r.parameters for r in _flow_runs(flow)], expected.model_dump(mode="json"))
    assert runs[0].state.is_completed(), (flow, runs[0].state)
    return runs[0]


def test_converted_commands_are_flow_runs_with_the_deployments_parameters(
        prefect_harness, tmp_path: Path, openforge_home: Path) -> None:
    task = make_task(tmp_path / "src", "cli-flow-run-task")

    res = _invoke(["init", "--json"])
    assert res.exit_code == 0, res.output
    assert _last_json(res)["home"] == str(openforge_home.resolve())
    _one_completed_run("init", InitParams())

    res = _invoke(["tasks", "import", str(task), "--purpose", "sft", "--json"])
    assert res.exit_code == 0, res.output
    assert [r["id"] for r in _last_json(res)["imported"]] == [task.name]
    assert "tasks-import: starting (Prefect flow run)" in res.output  # stderr is no terminal: plain progress
    _one_completed_run("tasks-import", TasksImportParams(paths=[str(task)], purpose="sft"))

    res = _invoke(["tasks", "verify", task.name, "--json"])
    assert res.exit_code == 0, res.output
    [row] = _last_json(res)
    assert row["id"] == task.name and row["passed"] and (row["oracle"], row["noop"]) == (1.0, 0.0)
    _one_completed_run("tasks-verify", TasksVerifyParams(task_ids=[task.name]))

    dest = tmp_path / "exported"
    res = _invoke(["tasks", "export", str(dest), "--json"])
    assert res.exit_code == 0, res.output
    assert [r["id"] for r in _last_json(res)] == [task.name] and (dest / task.name / "task.toml").is_file()
    _one_completed_run("tasks-export", TasksExportParams(dest=str(dest)))

    res = _invoke(["rollout", str(task), "--harness", "oracle", "--timeout", "120", "--json"])
    assert res.exit_code == 0, res.output
    doc = _last_json(res)
    assert doc["status"] == "ok" and doc["reward"] == 1.0
    run = _one_completed_run("rollout", RolloutParams(task_dir=str(task), harness="oracle", timeout=120))
    assert run.parameters["params"]["backend"] == "local" and run.parameters["params"]["preset"] == "local"

    out = tmp_path / "atif"
    res = _invoke(["export-atif", doc["rollout_id"], "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / f"{doc['rollout_id']}.trajectory.json").is_file()
    _one_completed_run("export-atif", ExportAtifParams(rollout_ids=[doc["rollout_id"]], out=str(out)))

    # a converted copy already there (its manifest names every file): prepare finds it, converts nothing
    from training.engines.model_store import DEFAULT_MODEL_NAME, write_manifest

    models = tmp_path / "models"
    (models / DEFAULT_MODEL_NAME).mkdir(parents=True)
    (models / DEFAULT_MODEL_NAME / "config.json").write_text("{}")
    write_manifest(models / DEFAULT_MODEL_NAME, {"test": True})
    res = _invoke(["model", "prepare", "--models-dir", str(models), "--json"])
    assert res.exit_code == 0, res.output
    assert _last_json(res) == {"path": str(models / DEFAULT_MODEL_NAME)}
    _one_completed_run("model-prepare", ModelPrepareParams(models_dir=str(models)))


def test_a_failed_step_fails_the_flow_run(prefect_harness, tmp_path: Path) -> None:
    """A rollout id the DB lacks: the ``export-atif`` flow run fails and the command says why last
    (Prefect's own error log shows here only because the test harness logs at WARNING; the CLI
    alone sets CRITICAL unless ``--debug``)."""
    assert _invoke(["init", "--no-limits"]).exit_code == 0
    res = CliRunner().invoke(app, ["export-atif", "no-such-rollout", "--out", str(tmp_path / "atif")])
    assert res.exit_code == 1
    assert res.output.strip().splitlines()[-1] == "rollout no-such-rollout: not in the DB"
    [run] = [r for r in _flow_runs("export-atif") if r.parameters["params"]["rollout_ids"] == ["no-such-rollout"]]
    assert run.state.is_failed(), run.state


@pytest.mark.parametrize("command", [["proxy", "serve"], ["deploy"]], ids=["proxy serve", "deploy"])
def test_the_commands_that_are_not_flow_runs_say_so_in_the_contract(command: list[str]) -> None:
    """The judged exceptions stand in docs/CONTRACTS.md with their reason."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "CONTRACTS.md").read_text()
    assert f"`{' '.join(command)}` is not a flow run" in text
