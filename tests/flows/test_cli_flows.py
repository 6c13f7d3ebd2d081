"""One front door: ``openforge`` commands run the flows the deployments run, with the same
parameters (cli/commands/*, flows/params.py)."""

from __future__ import annotations

import asyncio
import json

from typer.testing import CliRunner

from cli.app import app
from flows.params import SynthesizeParams


def _options(command: str) -> set[str]:
    import typer.main

    group = typer.main.get_command(app)
    return {param.name for param in group.commands[command].params}  # type: ignore[attr-defined]


def test_every_synthesize_option_is_a_parameter_of_the_deployed_flow() -> None:
    """Nothing the command can do is out of the deployment's reach (``--workers`` is ``parallelism``,
    ``--family`` is ``families``; ``--json`` only formats the output)."""
    renamed = {"workers": "parallelism", "family": "families"}
    fields = set(SynthesizeParams.model_fields)
    missing = {o for o in _options("synthesize") - {"json_out"} if renamed.get(o, o) not in fields}
    assert not missing, f"synthesize options the flow's parameters lack: {sorted(missing)}"


def test_synthesize_is_a_flow_run_with_the_commands_parameters_and_shows_progress(prefect_harness) -> None:
    from prefect.client.orchestration import get_client

    res = CliRunner().invoke(app, ["synthesize", "--n", "2", "--purpose", "sft", "--seed", "4", "--max-refine", "1",
                                   "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["status"] == "done" and report["tasks"] == {"verified": 2}
    # stderr is no terminal here: plain progress lines, the tracker's last one at 2 of 2
    assert "synthesize: starting (Prefect flow run)" in res.output
    assert "synthesis (claw, sft): 2/2 verified" in res.output

    async def runs() -> list[tuple[str, object]]:
        async with get_client() as client:
            found = [r for r in await client.read_flow_runs() if r.parameters.get("params", {}).get("seed") == 4]
            return [((await client.read_flow(r.flow_id)).name, r) for r in found]

    ((name, run),) = asyncio.run(runs())
    assert name == "synthesize" and run.state.is_completed()  # type: ignore[attr-defined]
    expected = SynthesizeParams(n=2, purpose="sft", seed=4, max_refine=1).model_dump(mode="json")
    assert run.parameters["params"] == expected  # type: ignore[attr-defined]
