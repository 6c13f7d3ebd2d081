"""The typed model of ``task.toml`` (schema_version 1.1, Harbor-compatible).

Harbor's older spelling (``version = "1.0"``, ``[metadata] tags/author_*``) is accepted and
normalized by :func:`normalize_raw` before validation.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.1"
KNOWN_SCHEMA_VERSIONS = ("1.0", "1.1")


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow")


class TaskSection(_Section):
    name: str
    description: str = ""
    keywords: list[str] = Field(default_factory=list)


class TaskMetadata(_Section):
    domain: str | None = None
    category: str | None = None
    difficulty: str | None = None
    purpose: Literal["rl", "sft"] = "rl"
    services: list[str] = Field(default_factory=list)
    harnesses: list[str] = Field(default_factory=list)
    synth_run_id: str | None = None
    proposer: str | None = None
    content_sha: str | None = None


class AgentSection(_Section):
    timeout_sec: float = Field(default=600.0, gt=0)


class VerifierSection(_Section):
    timeout_sec: float = Field(default=120.0, gt=0)
    #: Harbor's verifier environment: ``shared`` (the verifier runs in the agent's sandbox
    #: once the agent is gone) or ``separate`` (a fresh sandbox over the handed-over artifacts).
    environment_mode: Literal["shared", "separate"] = "shared"
    #: ``separate``: workspace paths (globs) handed to the verifier sandbox; empty: all of it.
    artifacts: list[str] = Field(default_factory=list)
    #: ``separate``: the verifier sandbox's environment dir (relative to the task; a Dockerfile
    #: there); None: the task's own ``environment/``.
    environment: str | None = None


class EnvironmentSection(_Section):
    build_timeout_sec: float = Field(default=600.0, gt=0)
    cpus: float = Field(default=1, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    storage_mb: int = Field(default=10240, gt=0)


class TaskConfig(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: Literal["1.1"] = SCHEMA_VERSION
    task: TaskSection
    metadata: TaskMetadata = Field(default_factory=TaskMetadata)
    agent: AgentSection = Field(default_factory=AgentSection)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)

    def to_toml_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def normalize_raw(raw: dict[str, Any], default_name: str) -> dict[str, Any]:
    """Map Harbor 1.0 / older spellings onto schema 1.1 (returns a new dict)."""
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    if "schema_version" not in data and "version" in data:
        data["schema_version"] = str(data.pop("version"))
    if data.get("schema_version") == "1.0":
        data["schema_version"] = SCHEMA_VERSION
    task = data.setdefault("task", {})
    if isinstance(task, dict):
        task.setdefault("name", default_name)
        meta = data.get("metadata")
        if isinstance(meta, dict) and "tags" in meta and "keywords" not in task:
            task["keywords"] = meta.pop("tags")
    return data
