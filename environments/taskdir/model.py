"""The typed model of ``task.toml``: Harbor's task config (harbor 0.26, schema 1.4), field
for field, plus our own keys in ``[metadata.openforge]`` (DESIGN §3).

Harbor's meaning and defaults: ``schema_version`` is free text (``version`` is its old
name); ``[metadata]`` is free-form; the verifier's timeout defaults to 600 s, the agent has
no limit unless set; ``memory`` / ``storage`` strings ("4G", "512M") become ``*_mb`` (a
conflict between the two is an error naming both); ``allow_internet`` becomes
``network_mode``. Every table keeps fields it does not know and writes them back unchanged.

Resources Harbor leaves unset (``cpus``, ``memory_mb``, ``storage_mb``) read as our runtime
defaults here (1 CPU, 2048 MB, 10240 MB) but are written back only when the task set them.

Our keys (domain, purpose, services, harnesses, synth_run_id, proposer, content_sha, and
any extra such as family/seed) live in ``[metadata.openforge]`` so a foreign task's
``[metadata]`` is never mistaken for ours. Tasks we wrote before (schema_version "1.1",
our keys at the top of ``[metadata]``) are read from there: see :func:`normalize_raw`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

#: The task-config version we write (Harbor's current one).
SCHEMA_VERSION = "1.4"
#: What our tasks carried before their keys moved into ``[metadata.openforge]``.
LEGACY_SCHEMA_VERSION = "1.1"
#: The table of ``[metadata]`` that holds our keys.
OPENFORGE_TABLE = "openforge"
#: The org our task names are written under (Harbor's ``[task].name`` is ``org/name``).
DEFAULT_ORG = "openforge"
ORG_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*$")

#: Keys of a legacy ``[metadata]`` that are Harbor's (or Terminal-Bench's) conventions, not ours.
_HARBOR_META_KEYS = ("category", "difficulty", "tags", "author_name", "author_email")
#: Keys only we ever wrote: their presence in a schema-1.1 ``[metadata]`` marks our old layout.
_LEGACY_MARKERS = ("content_sha", "synth_run_id", "proposer", "domain", "harnesses")
#: Marks a ``[task]`` that :func:`normalize_raw` made up (never written back).
_IMPLICIT = "__openforge_implicit__"

#: Runtime defaults where Harbor leaves a resource unset (the backend decides there too).
DEFAULT_CPUS = 1.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_STORAGE_MB = 10240

NetworkMode = Literal["no-network", "public", "allowlist"]


class _Section(BaseModel):
    """A task.toml table: unknown fields are kept (and written back)."""

    model_config = ConfigDict(extra="allow")

    def dump(self) -> dict[str, Any]:
        """What was given or set (plus unknown fields), never defaults nobody wrote."""
        return _dump_set(self)


def _dump_set(model: BaseModel) -> dict[str, Any]:
    out: dict[str, Any] = {}
    given = model.model_fields_set
    names = [n for n in type(model).model_fields if n in given] + list(model.__pydantic_extra__ or {})
    for name in names:
        value = getattr(model, name)
        if value is None:
            continue
        out[name] = _dump_value(value)
    return out


def _dump_value(value: Any) -> Any:
    if isinstance(value, _Section):
        return value.dump()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list):
        return [_dump_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump_value(v) for k, v in value.items() if v is not None}
    return value


def parse_size_mb(value: str, field: str) -> int:
    """``"4G"`` -> 4096, ``"512M"`` -> 512, ``"2048K"`` -> 2 (Harbor's units: 1G = 1024M)."""
    text = value.strip().upper()
    units = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
    if not text or text[-1] not in units:
        raise ValueError(f"{field} = {value!r}: expected a size like '4G', '512M' or '1024K'")
    try:
        number = float(text[:-1])
    except ValueError:
        raise ValueError(f"{field} = {value!r}: expected a size like '4G', '512M' or '1024K'") from None
    return int(number * units[text[-1]])


class Author(_Section):
    name: str
    email: str | None = None


class TaskSection(_Section):
    """``[task]``: Harbor's package info. ``name`` is ``org/name`` when we write it."""

    name: str
    version: str | None = Field(default=None, min_length=1)
    description: str = ""
    authors: list[Author] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)

    @property
    def short_name(self) -> str:
        return self.name.rsplit("/", 1)[-1]


class HealthcheckSection(_Section):
    """Docker HEALTHCHECK semantics: ``retries`` consecutive failures (after the start
    period) fail the environment before the agent starts."""

    command: str
    interval_sec: float = Field(default=5.0, gt=0)
    timeout_sec: float = Field(default=30.0, gt=0)
    start_period_sec: float = Field(default=0.0, ge=0)
    start_interval_sec: float = Field(default=5.0, gt=0)
    retries: int = Field(default=3, ge=1)


class _Phase(_Section):
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None


class AgentSection(_Phase):
    #: None: no limit (Harbor's default).
    timeout_sec: float | None = Field(default=None, gt=0)
    user: str | int | None = None


class EnvironmentSection(_Section):
    build_timeout_sec: float = Field(default=600.0, gt=0)
    docker_image: str | None = None
    os: Literal["linux", "windows"] = "linux"
    cpus: float = Field(default=DEFAULT_CPUS, gt=0)
    memory_mb: int = Field(default=DEFAULT_MEMORY_MB, gt=0)
    storage_mb: int = Field(default=DEFAULT_STORAGE_MB, gt=0)
    gpus: int | None = Field(default=None, ge=0)
    gpu_types: list[str] | None = None
    #: Resolved on the host at run time (``${VAR}``, ``${VAR:-default}``); never stored resolved.
    env: dict[str, str] = Field(default_factory=dict)
    skills_dir: str | None = None
    healthcheck: HealthcheckSection | None = None
    workdir: str | None = None
    network_mode: NetworkMode = "public"
    allowed_hosts: list[str] | None = None

    @field_validator("os", mode="before")
    @classmethod
    def _lower_os(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _migrate(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
            if old not in data:
                continue
            value = data.pop(old)
            if not isinstance(value, str):
                continue  # Harbor drops a non-string legacy size too
            size = parse_size_mb(value, old)
            if new in data and data[new] != size:
                raise ValueError(f"{old} = {value!r} ({size} MB) conflicts with {new} = {data[new]!r}: set only one")
            data.setdefault(new, size)
        allow = data.pop("allow_internet", None)
        if allow is not None and "network_mode" not in data and data.get("allowed_hosts") is None:
            data["network_mode"] = "public" if allow else "no-network"
        return data


class VerifierSection(_Phase):
    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    #: ``shared`` (the verifier runs in the agent's sandbox once the agent is gone) or
    #: ``separate`` (a fresh sandbox over the handed-over artifacts). None: ``separate``
    #: when ``[verifier.environment]`` is set, else ``shared`` (:attr:`mode`).
    environment_mode: Literal["shared", "separate"] | None = None
    #: The separate verifier's own environment (Harbor's table). A string (ours, issue 14:
    #: a dir of the task holding its Dockerfile) is written to ``[metadata.openforge]
    #: verifier_environment`` so Harbor never sees it (:attr:`TaskConfig.verifier_environment_dir`).
    environment: EnvironmentSection | str | None = None
    #: ours (``separate``): workspace globs handed to the verifier sandbox; empty: all of it.
    artifacts: list[str] = Field(default_factory=list)

    @property
    def mode(self) -> Literal["shared", "separate"]:
        if self.environment_mode is not None:
            return self.environment_mode
        return "separate" if self.environment is not None else "shared"

    @model_validator(mode="after")
    def _consistent(self) -> VerifierSection:
        if self.environment_mode == "shared" and isinstance(self.environment, EnvironmentSection):
            raise ValueError("environment_mode = 'shared' conflicts with [verifier.environment]: "
                             "drop the table or set environment_mode = 'separate'")
        return self


class SolutionSection(_Section):
    env: dict[str, str] = Field(default_factory=dict)


class StepSection(_Section):
    """One ``[[steps]]`` entry: ``steps/<name>/instruction.md`` (+ its own tests/, solution/)."""

    name: str
    agent: AgentSection = Field(default_factory=AgentSection)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    min_reward: float | dict[str, float] | None = None
    healthcheck: HealthcheckSection | None = None
    artifacts: list[str | dict[str, Any]] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _portable(cls, value: str) -> str:
        if not value.strip() or value in {".", ".."} or re.search(r'[<>:"/\\|?*\x00-\x1f]', value) \
                or value.endswith((".", " ")):
            raise ValueError(f"step name {value!r} is not a portable directory name")
        return value


class OpenForgeMeta(_Section):
    """``[metadata.openforge]``: our own keys (extra keys such as family/seed are kept)."""

    domain: str | None = None
    purpose: Literal["rl", "sft"] = "rl"
    services: list[str] = Field(default_factory=list)
    harnesses: list[str] = Field(default_factory=list)
    synth_run_id: str | None = None
    proposer: str | None = None
    content_sha: str | None = None


#: The old name of :class:`OpenForgeMeta`.
TaskMetadata = OpenForgeMeta


class TaskConfig(_Section):
    """A whole task.toml. ``metadata`` is Harbor's free-form table (without our
    ``openforge`` table, which is :attr:`openforge`)."""

    _implicit_name: str | None = PrivateAttr(default=None)

    schema_version: str = SCHEMA_VERSION
    task: TaskSection
    metadata: dict[str, Any] = Field(default_factory=dict)
    openforge: OpenForgeMeta = Field(default_factory=OpenForgeMeta)
    agent: AgentSection = Field(default_factory=AgentSection)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)
    solution: SolutionSection = Field(default_factory=SolutionSection)
    source: str | None = None
    multi_step_reward_strategy: Literal["mean", "final"] | None = None
    steps: list[StepSection] | None = None
    artifacts: list[str | dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _split_metadata(cls, data: Any, handler: Any) -> Any:
        """Built in code (our writers): a flat ``metadata`` is ours, as it always was. A
        ``[task]`` that :func:`normalize_raw` made up from the directory name is remembered,
        so it is not written back."""
        implicit: str | None = None
        if isinstance(data, dict):
            data = dict(data)
            if "version" in data:
                data.setdefault("schema_version", str(data.pop("version")))
                data.pop("version", None)
            task = data.get("task")
            if isinstance(task, dict) and _IMPLICIT in task:
                task = {k: v for k, v in task.items() if k != _IMPLICIT}
                data["task"], implicit = task, task.get("name")
            meta = data.get("metadata")
            if isinstance(meta, dict) and "openforge" not in data:
                meta = dict(meta)
                ours = meta.pop(OPENFORGE_TABLE, None)
                if ours is None:
                    ours = {k: meta.pop(k) for k in list(meta) if k not in _HARBOR_META_KEYS}
                data["metadata"], data["openforge"] = meta, ours
        model = handler(data)
        if implicit is not None and isinstance(model, TaskConfig):
            model._implicit_name = implicit
        return model

    @field_validator("steps")
    @classmethod
    def _unique_steps(cls, steps: list[StepSection] | None) -> list[StepSection] | None:
        seen: set[str] = set()
        for step in steps or []:
            key = step.name.casefold()
            if key in seen:
                raise ValueError(f"step name {step.name!r} is used twice")
            seen.add(key)
        return steps

    # -- what our code reads ----------------------------------------------------------
    @property
    def category(self) -> str | None:
        value = self.metadata.get("category")
        return None if value is None else str(value)

    @property
    def difficulty(self) -> str | None:
        value = self.metadata.get("difficulty")
        return None if value is None else str(value)

    @property
    def verifier_environment_dir(self) -> str | None:
        """Our ``separate`` verifier's environment dir (relative to the task), if declared."""
        if isinstance(self.verifier.environment, str):
            return self.verifier.environment
        value = (self.openforge.__pydantic_extra__ or {}).get("verifier_environment")
        return value if isinstance(value, str) else None

    @property
    def is_multi_step(self) -> bool:
        return bool(self.steps)

    def to_toml_dict(self) -> dict[str, Any]:
        """The task.toml document: Harbor's tables as given or set (unknown fields kept),
        our keys in ``[metadata.openforge]``, defaults nobody wrote left out."""
        out = self.dump()
        out.pop("openforge", None)
        out["schema_version"] = self.schema_version
        task = self.task.dump()
        if self._implicit_name is None or task != {"name": self._implicit_name}:
            out["task"] = task
        else:
            out.pop("task", None)
        ours = self.openforge.dump()
        for name in ("agent", "verifier", "environment", "solution"):
            section = getattr(self, name).dump()
            if name == "verifier" and isinstance(section.get("environment"), str):
                ours["verifier_environment"] = section.pop("environment")
            if section:
                out[name] = section
            else:
                out.pop(name, None)
        meta = {k: _dump_value(v) for k, v in self.metadata.items()}
        if ours:
            meta[OPENFORGE_TABLE] = ours
        if meta:
            out["metadata"] = meta
        else:
            out.pop("metadata", None)
        order = ["schema_version", "source", "multi_step_reward_strategy", "task", "steps", "metadata",
                 "verifier", "agent", "environment", "solution"]
        return {k: out[k] for k in [*order, *sorted(set(out) - set(order))] if k in out}


def is_legacy_openforge(raw: dict[str, Any]) -> bool:
    """A task we wrote before ``[metadata.openforge]``: schema "1.1", no such table, and one
    of the keys only we wrote at the top of ``[metadata]``."""
    meta = raw.get("metadata")
    if not isinstance(meta, dict) or isinstance(meta.get(OPENFORGE_TABLE), dict):
        return False
    version = raw.get("schema_version", raw.get("version"))
    return str(version) == LEGACY_SCHEMA_VERSION and any(k in meta for k in _LEGACY_MARKERS)


def openforge_keys(raw: dict[str, Any]) -> dict[str, Any]:
    """Our keys of a raw task.toml document (``[metadata.openforge]``, or the legacy place)."""
    meta = raw.get("metadata")
    if not isinstance(meta, dict):
        return {}
    if isinstance(meta.get(OPENFORGE_TABLE), dict):
        return dict(meta[OPENFORGE_TABLE])
    if is_legacy_openforge(raw):
        return {k: v for k, v in meta.items() if k not in _HARBOR_META_KEYS}
    return {}


def normalize_raw(raw: dict[str, Any], default_name: str) -> dict[str, Any]:
    """A raw task.toml document as :class:`TaskConfig` input (a new dict): ``version`` ->
    ``schema_version``, a missing ``[task]`` named after the directory, our keys taken from
    ``[metadata.openforge]`` or, for tasks we wrote before, from the top of ``[metadata]``;
    a foreign ``[metadata]`` stays free-form and is never read as ours."""
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    if "version" in data:
        data.setdefault("schema_version", str(data.pop("version")))
        data.pop("version", None)
    task = data.get("task")
    if task is None:
        data["task"] = task = {"name": default_name, _IMPLICIT: True}
    elif isinstance(task, dict):
        task.setdefault("name", default_name)
    meta = data.get("metadata")
    if meta is None:
        meta = {}
    if isinstance(meta, dict):
        ours = openforge_keys(raw)
        if is_legacy_openforge(raw):
            meta = {k: v for k, v in meta.items() if k in _HARBOR_META_KEYS}
        else:
            meta = {k: v for k, v in meta.items() if k != OPENFORGE_TABLE}
        data["metadata"] = meta
        data["openforge"] = ours
    return data


def harbor_name(name: str, org: str = DEFAULT_ORG) -> str:
    """``name`` as Harbor's ``org/name`` (ours get ``openforge/``; unsafe characters -> ``-``)."""
    if ORG_NAME.match(name) and ".." not in name:
        return name
    short = re.sub(r"[^a-zA-Z0-9._-]+", "-", name.rsplit("/", 1)[-1]).strip("-.") or "task"
    return f"{org}/{short}"
