"""Every procedural domain's task record is a FamilyTask: the same six opening fields, stamped
by the registry, and the name each domain files its tasks under."""

from __future__ import annotations

import dataclasses

import pytest

from environments.browser.families import BrowserTask
from environments.browser.families import generate as browser_generate
from environments.computer.families import GuiTask
from environments.computer.families import generate as computer_generate
from environments.family_registry import FamilyRegistry, FamilyTask
from synthesis.procedural import ProceduralTask
from synthesis.procedural import generate as claw_generate

OPENING = ["family", "seed", "difficulty", "category", "title", "instruction"]


@pytest.mark.parametrize("record", [ProceduralTask, BrowserTask, GuiTask])
def test_task_records_open_with_the_shared_fields(record: type) -> None:
    assert issubclass(record, FamilyTask)
    assert [f.name for f in dataclasses.fields(record)][:6] == OPENING


@pytest.mark.parametrize(("generate", "family", "prefix"), [
    (claw_generate, "contact-lookup", "claw"),
    (browser_generate, "shop-purchase", "browser"),
    (computer_generate, "files-organize", "computer"),
])
def test_generated_tasks_are_stamped_and_named(generate, family: str, prefix: str) -> None:
    task = generate(family, 7, "medium")
    assert (task.family, task.seed, task.difficulty) == (family, 7, "medium")
    assert task.name == f"{prefix}-{family}-medium-7"


def test_registry_stamps_a_drawn_difficulty() -> None:
    registry: FamilyRegistry[FamilyTask] = FamilyRegistry("test")
    registry.register("echo", lambda rng, d: FamilyTask("", 0, "easy", "c", "t", "i"))
    task = registry.generate("echo", 3)
    assert task.family == "echo" and task.seed == 3 and task.difficulty in ("easy", "medium", "hard")
    assert task.name == f"task-echo-{task.difficulty}-3"
