"""Procedural claw generators: deterministic, varied, and every family verifiable."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from environments.taskdir import validate_task, write_task
from synthesis.procedural.families import FAMILIES, FAMILY_SERVICES, generate
from synthesis.procedural.render import task_config, task_files
from synthesis.procedural.spec import DIFFICULTIES
from tests.synthesis.checks import sandbox_checker


def test_at_least_eight_families_single_and_multi_service() -> None:
    assert len(FAMILIES) >= 8
    multi = [f for f, s in FAMILY_SERVICES.items() if len(s) > 1]
    single = [f for f, s in FAMILY_SERVICES.items() if len(s) == 1]
    assert len(multi) >= 3 and len(single) >= 3


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_same_family_and_seed_give_the_same_task(family: str) -> None:
    a, b = generate(family, 17), generate(family, 17)
    assert a.instruction == b.instruction and a.fixtures == b.fixtures and a.checks == b.checks
    assert task_files(a) == task_files(b)
    assert generate(family, 18).fixtures != a.fixtures


def test_instructions_vary_in_phrasing_and_difficulty_scales_fixtures() -> None:
    for family in FAMILIES:
        openings = {generate(family, s).instruction.split()[0] for s in range(30)}
        assert len(openings) >= 2, family
    sizes = {d: len(generate("mail-label", 5, d).fixtures["gmail"]["messages"]) for d in DIFFICULTIES}
    assert sizes["easy"] < sizes["medium"] < sizes["hard"]
    hard = generate("calendar-schedule", 3, "hard").instruction
    assert "first free" in hard


def test_rendered_task_dir_is_valid_and_hides_answers_from_the_agent(tmp_path: Path) -> None:
    spec = generate("crm-deal-won", 9, "hard")
    td = write_task(tmp_path / spec.name, task_config(spec, run_id="r1"), spec.instruction, task_files(spec))
    assert validate_task(td.path) == []
    assert td.config.openforge.services == ["gmail", "crm"]
    assert td.config.openforge.domain == "claw" and td.config.openforge.synth_run_id == "r1"
    solve = (td.path / "solution" / "solve.sh").read_text()
    assert "python3 -m environments.claw.call" in solve and "\ncall crm_update_deal " in solve
    assert not (td.path / "environment" / "tests").exists()


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_oracle_scores_one_and_noop_zero(family: str, tmp_path: Path) -> None:
    spec = generate(family, 101)
    td = write_task(tmp_path / "tasks" / spec.name, task_config(spec), spec.instruction, task_files(spec))
    checker = sandbox_checker()

    async def both():  # noqa: ANN202
        return await checker.check(td.path, "oracle"), await checker.check(td.path, "noop")

    oracle, noop = asyncio.run(both())
    assert oracle.reward == 1.0, (oracle.error, oracle.checks)
    assert oracle.rollout_id and noop.rollout_id  # both ran as rollouts (runner in a sandbox)
    assert all(oracle.checks.values())
    assert noop.reward == 0.0 and noop.status == "ok"
    assert not all(noop.checks.values())
