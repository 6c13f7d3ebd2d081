"""What a procedural generator produces: one claw task, as plain data.

A :class:`ProceduralTask` holds the instruction, the services and their fixtures, the
oracle's steps (tool calls through the call CLI, workspace writes) and the verifier's
checks; :mod:`synthesis.procedural.render` turns it into a task directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from environments.family_registry import DIFFICULTIES, Difficulty, FamilyTask  # noqa: F401 - re-exported


@dataclass
class Step:
    """One oracle step: a tool call (``tool`` + ``args``), a workspace file write, or the
    episode's final reply (``answer``: what the agent says when it is done)."""

    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    write_path: str | None = None
    content: str = ""
    answer: str | None = None

    @classmethod
    def call(cls, tool: str, **args: Any) -> Step:
        return cls(tool=tool, args=args)

    @classmethod
    def write(cls, path: str, content: str) -> Step:
        return cls(write_path=path, content=content)

    @classmethod
    def reply(cls, text: str) -> Step:
        return cls(answer=text)


@dataclass
class ProceduralTask(FamilyTask):
    """A fully specified claw task from one (family, seed, difficulty)."""

    name_prefix: ClassVar[str] = "claw"

    services: list[str]
    fixtures: dict[str, dict[str, Any]]
    solution: list[Step]
    checks: list[dict[str, Any]]
    keywords: list[str] = field(default_factory=list)
    #: Tools the task offers (default: every tool of its services).
    tools: list[str] | None = None
    #: ``all``: reward 1 only when every check passes; ``weighted``: the weighted share of
    #: checks passed (each check's ``weight``, default 1), for partial credit.
    scoring: Literal["all", "weighted"] = "all"
