"""Shared machinery of the claw mock services: action registry, in-memory state with
fixtures, the audit log, argument helpers and the errors a model sees.

A service module (``environments/claw/services/<name>.py``) declares a :class:`ServiceSpec`
(its collections and actions); :mod:`environments.claw.app` turns specs into HTTP routes
and :mod:`environments.claw.tools` into tool schemas. Nothing here does I/O.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Annotated, Any, Callable

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model

DEFAULT_NOW = "2026-03-02T09:00:00Z"


class ClawError(Exception):
    """An error returned to the caller as ``{"error": {type, message, hint}}`` (4xx)."""

    def __init__(self, status: int, type_: str, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.hint = hint

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {"type": self.type, "message": self.message}
        if self.hint:
            err["hint"] = self.hint
        return {"error": err}


class FixtureError(ValueError):
    """A fixture file/document is malformed; the message names the service and field."""


def not_found(what: str, ident: Any, hint: str | None = None) -> ClawError:
    return ClawError(404, "not_found", f"no {what} with id {ident!r}", hint)


def bad_request(message: str, hint: str | None = None) -> ClawError:
    return ClawError(422, "invalid_arguments", message, hint)


# ---------------------------------------------------------------- argument types

class Args(BaseModel):
    """Base of every action's arguments: unknown keys are an error (models learn names)."""

    model_config = ConfigDict(extra="forbid")


def format_time(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime:
    """ISO 8601 time; naive times are UTC. Raises ValueError with a readable message."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 time like 2026-03-04T10:30:00Z") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed


def _norm_time(value: str) -> str:
    return format_time(parse_time(value))


def _norm_date(value: str) -> str:
    try:
        return date.fromisoformat(value.strip()[:10]).isoformat()
    except ValueError:
        raise ValueError(f"{value!r} is not a date like 2026-03-04") from None


def _as_list(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _check_emails(values: list[str]) -> list[str]:
    for v in values:
        if "@" not in v or " " in v.strip():
            raise ValueError(f"{v!r} is not an email address")
    return [v.strip() for v in values]


def _check_email(value: str) -> str:
    return _check_emails([value])[0]


#: An ISO 8601 time, normalized to ``YYYY-MM-DDTHH:MM:SSZ`` (UTC).
IsoTime = Annotated[str, AfterValidator(_norm_time)]
#: A calendar date ``YYYY-MM-DD``.
IsoDate = Annotated[str, AfterValidator(_norm_date)]
#: A list of email addresses; a comma-separated string is accepted too.
EmailList = Annotated[list[str], BeforeValidator(_as_list), AfterValidator(_check_emails)]
Email = Annotated[str, AfterValidator(_check_email)]
#: A list of strings; a comma-separated string is accepted too.
StrList = Annotated[list[str], BeforeValidator(_as_list)]


def describe_validation_error(tool: str, exc: ValidationError) -> str:
    """One line naming every bad argument: ``gmail_send: 'to': required; ...``."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "missing":
            parts.append(f"'{loc}': required")
        elif err["type"] == "extra_forbidden":
            parts.append(f"'{loc}': unknown argument")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            parts.append(f"'{loc}': {msg}")
    return f"{tool}: " + "; ".join(parts)


def schema_hint(model: type[BaseModel]) -> str:
    """``arguments: to (array, required), subject (string, required), cc (array)``."""
    schema = model.model_json_schema()
    required = set(schema.get("required", []))
    items = []
    for name, prop in schema.get("properties", {}).items():
        kind = prop.get("type") or "/".join(
            str(p.get("type")) for p in prop.get("anyOf", []) if p.get("type") != "null"
        ) or "value"
        items.append(f"{name} ({kind}{', required' if name in required else ''})")
    return "arguments: " + (", ".join(items) if items else "none")


# ---------------------------------------------------------------- search

_WORD = re.compile(r"[a-z0-9][a-z0-9@._+-]*")
_STOP = frozenset(
    "a an and are as at be by for from how i in is it me my of on or our the to was we what "
    "when where which who why with you your".split()
)


def query_words(query: str) -> list[str]:
    words = [w.strip("._-") for w in _WORD.findall(query.lower())]
    return [w for w in words if len(w) > 1 and w not in _STOP]


def rank(query: str | None, items: list[dict], text: Callable[[dict], str]) -> list[dict]:
    """Items ranked by how many query words occur in ``text(item)``; no query → all items."""
    words = query_words(query or "")
    if not words:
        return list(items)
    scored = []
    for pos, item in enumerate(items):
        hay = text(item).lower()
        score = sum(1 for w in words if w in hay)
        if score:
            scored.append((-score, pos, item))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [item for _, _, item in scored]


def joined(item: dict, *keys: str) -> str:
    parts = []
    for k in keys:
        v = item.get(k)
        if isinstance(v, list):
            parts.extend(str(x) for x in v)
        elif v is not None:
            parts.append(str(v))
    return " \n".join(parts)


# ---------------------------------------------------------------- specs

@dataclass(frozen=True)
class Collection:
    """A list of objects in a service's state: id prefix for new objects, defaults filled
    into fixture objects, keys every fixture object must have."""

    prefix: str
    defaults: dict[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    id_key: str = "id"


@dataclass(frozen=True)
class Action:
    name: str
    description: str
    args: type[Args]
    handler: Callable[[Store, Any], Any]


class ServiceSpec:
    """A service's name, collections, extra top-level state keys and actions."""

    RESERVED = frozenset({"audit", "state", "reset"})

    def __init__(
        self,
        name: str,
        description: str,
        collections: dict[str, Collection],
        extras: dict[str, Any] | None = None,
    ) -> None:
        if "_" in name:
            raise ValueError(f"service name {name!r} must not contain '_'")
        self.name = name
        self.description = description
        self.collections = collections
        self.extras = extras or {}
        self.actions: dict[str, Action] = {}

    def action(self, name: str, args: type[Args], description: str) -> Callable:
        """Decorator registering ``handler(store, args) -> result`` as ``<service>_<name>``."""
        if name in self.RESERVED:
            raise ValueError(f"{self.name}: action name {name!r} is reserved")

        def register(handler: Callable[[Store, Any], Any]) -> Callable[[Store, Any], Any]:
            self.actions[name] = Action(name, description, args, handler)
            return handler

        return register

    def get_action(self, name: str, *, collection: str, kind: str, description: str, id_description: str = "",
                   args: type[Args] | None = None) -> None:
        """Register ``<service>_<name>``: one object of ``collection`` by id, answered as
        ``{kind: object}`` (a 404 naming ``kind`` when there is none). Its arguments: ``args``
        (a model with an ``id``, when other actions share it) or a ``GetArgs`` model made here
        whose ``id`` says ``id_description``."""
        if args is None:
            args = create_model("GetArgs", __base__=Args, id=(str, Field(description=id_description)))

        def get(store: Store, a: Any) -> dict[str, Any]:
            return {kind: dict(store.get(collection, a.id, kind))}

        self.action(name, args, description)(get)

    def tool_name(self, action: str) -> str:
        return f"{self.name}_{action}"


# ---------------------------------------------------------------- audit + state

class AuditLog:
    """Every call and state change of one launcher process, in order (global ``seq``)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._seq = 0

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        event = {"seq": self._seq, **event}
        self.events.append(event)
        return event

    def for_service(self, service: str, since: int = 0) -> list[dict[str, Any]]:
        return [e for e in self.events if e["service"] == service and e["seq"] > since]

    def drop_service(self, service: str) -> None:
        self.events = [e for e in self.events if e["service"] != service]


def _fixture_objects(spec: ServiceSpec, coll_name: str, coll: Collection, raw: Any) -> list[dict]:
    where = f"{spec.name}.json: {coll_name}"
    if not isinstance(raw, list):
        raise FixtureError(f"{where}: expected a list of objects, got {type(raw).__name__}")
    out, seen = [], set()
    for i, obj in enumerate(raw):
        if not isinstance(obj, dict):
            raise FixtureError(f"{where}[{i}]: expected an object")
        missing = [k for k in coll.required if k not in obj]
        if missing:
            raise FixtureError(f"{where}[{i}]: missing {', '.join(missing)}")
        item = copy.deepcopy(coll.defaults)
        item.update(copy.deepcopy(obj))
        ident = item.get(coll.id_key)
        if ident is None:
            ident = item[coll.id_key] = f"{coll.prefix}-{i + 1:04d}"
        if ident in seen:
            raise FixtureError(f"{where}[{i}]: duplicate {coll.id_key} {ident!r}")
        seen.add(ident)
        out.append(item)
    return out


class Store:
    """One service's live state (collections of dicts + extra keys) and its audit view.

    Handlers change state only through :meth:`insert`, :meth:`update`, :meth:`delete`, so
    every change is audited with before/after copies.
    """

    def __init__(self, spec: ServiceSpec, audit: AuditLog, fixtures: dict[str, Any] | None = None) -> None:
        self.spec = spec
        self.audit = audit
        self.state: dict[str, Any] = {}
        self._call_seq: int | None = None
        self._counter: dict[str, int] = {}
        self._ticks = 0
        self.load(fixtures or {})

    # -- lifecycle
    def load(self, fixtures: dict[str, Any]) -> None:
        """Replace the state by ``fixtures`` (validated) and clear this service's audit."""
        if not isinstance(fixtures, dict):
            raise FixtureError(f"{self.spec.name}.json: expected a JSON object")
        state: dict[str, Any] = copy.deepcopy(self.spec.extras)
        for key, value in fixtures.items():
            if key not in self.spec.collections:
                state[key] = copy.deepcopy(value)
        for name, coll in self.spec.collections.items():
            state[name] = _fixture_objects(self.spec, name, coll, fixtures.get(name, []))
        now = state.get("now", DEFAULT_NOW)
        try:
            state["now"] = _norm_time(str(now))
        except ValueError as exc:
            raise FixtureError(f"{self.spec.name}.json: now: {exc}") from None
        self.state = state
        self._counter = {name: 0 for name in self.spec.collections}
        self._ticks = 0
        self.audit.drop_service(self.spec.name)

    def snapshot(self) -> dict[str, Any]:
        return copy.deepcopy(self.state)

    # -- call bracketing (used by the app)
    def begin_call(self, action: str, args: Any) -> dict[str, Any]:
        event = self.audit.append(
            {
                "service": self.spec.name,
                "kind": "call",
                "action": action,
                "tool": self.spec.tool_name(action),
                "args": copy.deepcopy(args),
                "ok": None,
                "status": None,
                "error": None,
            }
        )
        self._call_seq = event["seq"]
        return event

    def end_call(self, event: dict[str, Any], status: int, error: str | None = None) -> None:
        event["ok"] = 200 <= status < 300
        event["status"] = status
        event["error"] = error
        self._call_seq = None

    # -- helpers for handlers
    def now(self) -> str:
        """The service clock: fixture ``now`` plus one second per object created."""
        self._ticks += 1
        return format_time(parse_time(self.state["now"]) + timedelta(seconds=self._ticks))

    def items(self, collection: str) -> list[dict[str, Any]]:
        return self.state[collection]

    def find(self, collection: str, ident: Any) -> dict[str, Any] | None:
        key = self.spec.collections[collection].id_key
        for item in self.state[collection]:
            if item.get(key) == ident:
                return item
        return None

    def get(self, collection: str, ident: Any, what: str | None = None) -> dict[str, Any]:
        item = self.find(collection, ident)
        if item is None:
            ids = [i.get(self.spec.collections[collection].id_key) for i in self.state[collection]]
            sample = ", ".join(map(str, ids[:10])) + (" ..." if len(ids) > 10 else "")
            hint = f"known ids: {sample}" if ids else f"there are no {collection} yet"
            raise not_found(what or collection.rstrip("s"), ident, hint)
        return item

    def new_id(self, collection: str) -> str:
        coll = self.spec.collections[collection]
        while True:
            self._counter[collection] += 1
            ident = f"{coll.prefix}-{self._counter[collection]:04d}"
            if self.find(collection, ident) is None:
                return ident

    def _change(self, op: str, collection: str, ident: Any, before: Any, after: Any) -> None:
        self.audit.append(
            {
                "service": self.spec.name,
                "kind": "change",
                "op": op,
                "collection": collection,
                "id": ident,
                "before": copy.deepcopy(before),
                "after": copy.deepcopy(after),
                "call_seq": self._call_seq,
            }
        )

    def insert(self, collection: str, obj: dict[str, Any]) -> dict[str, Any]:
        coll = self.spec.collections[collection]
        item = copy.deepcopy(coll.defaults)
        item.update(obj)
        if item.get(coll.id_key) is None:
            item[coll.id_key] = self.new_id(collection)
        self.state[collection].append(item)
        self._change("create", collection, item[coll.id_key], None, item)
        return copy.deepcopy(item)

    def update(self, collection: str, ident: Any, patch: dict[str, Any]) -> dict[str, Any]:
        item = self.get(collection, ident)
        before = copy.deepcopy(item)
        item.update(copy.deepcopy(patch))
        if item != before:
            self._change("update", collection, ident, before, item)
        return copy.deepcopy(item)

    def delete(self, collection: str, ident: Any) -> dict[str, Any]:
        item = self.get(collection, ident)
        self.state[collection].remove(item)
        self._change("delete", collection, ident, item, None)
        return copy.deepcopy(item)
