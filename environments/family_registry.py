"""The registry behind every procedural task family (claw tasks in ``synthesis.procedural``,
``environments.computer.families``, ``environments.browser.families``).

A family is a function ``(rng, difficulty) -> task`` registered under a name;
:meth:`FamilyRegistry.generate` makes ``(name, seed, difficulty)`` deterministic: the rng is
seeded from ``"<seed_prefix><name>:<seed>"``, a ``None`` difficulty is drawn from it, and the
task is stamped with its family, seed and difficulty. Every family's task record is a
:class:`FamilyTask`: the six fields they all open with and the name they are filed under.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Generic, Literal, TypeVar

Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[Difficulty, ...] = ("easy", "medium", "hard")



@dataclass
class FamilyTask:
    """What every procedural task record opens with: where it came from (``family``, ``seed``,
    ``difficulty``, stamped by :meth:`FamilyRegistry.generate`) and what it asks
    (``category``, ``title``, ``instruction``). A domain's record adds its own fields and
    sets ``name_prefix``."""

    family: str
    seed: int
    difficulty: Difficulty
    category: str
    title: str
    instruction: str

    #: The domain's prefix of task names: ``<prefix>-<family>-<difficulty>-<seed>``.
    name_prefix: ClassVar[str] = "task"

    @property
    def name(self) -> str:
        return f"{self.name_prefix}-{self.family}-{self.difficulty}-{self.seed}"


T = TypeVar("T", bound=FamilyTask)


class FamilyRegistry(Generic[T]):
    """Named task families of one kind (``kind`` names them in errors)."""

    def __init__(self, kind: str, *, seed_prefix: str = "") -> None:
        self.kind, self.seed_prefix = kind, seed_prefix
        self.families: dict[str, Callable[[random.Random, Difficulty], T]] = {}

    def register(self, name: str, fn: Callable[[random.Random, Difficulty], T]) -> Callable[[random.Random, Difficulty], T]:
        self.families[name] = fn
        return fn

    def generate(self, name: str, seed: int, difficulty: Difficulty | None = None) -> T:
        """The task of family ``name`` for ``seed`` (difficulty drawn from the seed if None)."""
        if name not in self.families:
            raise KeyError(f"unknown {self.kind} family {name!r} (known: {', '.join(sorted(self.families))})")
        rng = random.Random(f"{self.seed_prefix}{name}:{seed}")
        diff: Difficulty = difficulty or rng.choice(DIFFICULTIES)
        task = self.families[name](rng, diff)
        task.family, task.seed, task.difficulty = name, seed, diff
        return task
