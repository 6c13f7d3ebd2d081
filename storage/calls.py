"""Linear storage of a rollout's model calls (DESIGN §4, issue 18).

A harness re-sends its whole growing history on every call, so storing every call in full
grows with the square of the trajectory. A row of ``model_calls`` may instead hold a call
*relative to an earlier call of the same rollout* (its base):

- ``base_index`` NULL: the row holds the call in full (every row written before migration
  0002, and every call that shares nothing with an earlier one: the first call, a
  compaction, a restarted proxy's first call).
- ``base_index = j``: ``delta = {"prompt": L, "request": SPEC}``.
  ``prompt_token_ids`` holds only the new suffix: the call's prompt is the first ``L``
  tokens of call j's prompt + response tokens, then the suffix. ``request`` holds only what
  differs from call j's request; ``SPEC`` names every key of the full request in order:
  ``0`` the row holds the value, ``1`` equal to j's value, ``[n]`` a list that starts with
  j's first n elements and goes on with the row's list, ``{...}`` a dict spelled by the
  same rules one level down (the caller's original body in ``_client_request``).

Everything else (response, response ids, logprobs, usage ...) is always stored as is.
:func:`expand_calls` turns rows of one rollout back into full calls — what every reader
(the admin API, trajectory reconstruction, SFT export, evaluation) sees, identical to what a
full row would have held. :func:`encode_call` is the writer's side.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

#: Columns of ``model_calls`` that :func:`expand_calls` returns (the full call).
CALL_COLUMNS = (
    "id", "rollout_id", "index", "api", "model", "request", "response", "side_file", "prompt_token_ids",
    "response_token_ids", "response_logprobs", "finish_reason", "usage", "latency_ms", "policy_version",
    "status", "error", "created_at",
)
_CHUNK = 4096
#: A base is worth referencing only when it shares at least this many prompt tokens, or
#: (calls without token ids) some of the request.
MIN_SHARED_TOKENS = 16


class CallStorageError(ValueError):
    """A stored row that cannot be expanded (its base is missing or does not fit)."""


@dataclass(frozen=True)
class CallBase:
    """What the writer keeps of an acknowledged call to store later calls against it."""

    index: int
    request: dict[str, Any] | None
    prompt_token_ids: list[int] | None
    response_token_ids: list[int] | None


# -- token ids -------------------------------------------------------------------------------
def shared_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (C-speed slice compares)."""
    m = min(len(a), len(b))
    if m == 0:
        return 0
    if a[:m] == b[:m]:
        return m
    i = 0
    while i < m:  # find the first differing chunk, then the first differing element in it
        j = min(m, i + _CHUNK)
        if a[i:j] != b[i:j]:
            while a[i] == b[i]:
                i += 1
            return i
        i = j
    return m


def _shared_with_base(prompt: list[int], base: CallBase) -> int:
    """Tokens ``prompt`` shares with the start of ``base``'s prompt + response."""
    head = base.prompt_token_ids or []
    n = shared_prefix(prompt, head)
    if n == len(head) and base.response_token_ids:
        n += shared_prefix(prompt[n:], base.response_token_ids)
    return n


def _base_sequence_head(base: Mapping[str, Any], n: int) -> list[int]:
    head = base.get("prompt_token_ids") or []
    if n <= len(head):
        return head[:n]
    tail = base.get("response_token_ids") or []
    if n > len(head) + len(tail):
        raise CallStorageError(f"call {base.get('index')} holds {len(head) + len(tail)} tokens, a later call "
                               f"refers to {n}")
    return head + tail[: n - len(head)]


# -- request JSON ----------------------------------------------------------------------------
def _diff(new: Mapping[str, Any], base: Mapping[str, Any], depth: int) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """``(stored, spec, shares_anything)`` of ``new`` against ``base`` (see the module doc)."""
    stored: dict[str, Any] = {}
    spec: dict[str, Any] = {}
    shares = False
    for key, value in new.items():
        if key in base:
            old = base[key]
            if value is old or (type(value) is type(old) and value == old):
                spec[key] = 1
                shares = True
                continue
            if isinstance(value, list) and isinstance(old, list):
                n = shared_prefix(value, old)
                if n:
                    spec[key] = [n]
                    stored[key] = value[n:]
                    shares = True
                    continue
            if depth > 0 and isinstance(value, dict) and isinstance(old, dict):
                sub_stored, sub_spec, sub_shares = _diff(value, old, depth - 1)
                if sub_shares:
                    spec[key] = sub_spec
                    stored[key] = sub_stored
                    shares = True
                    continue
        spec[key] = 0
        stored[key] = value
    return stored, spec, shares


def _apply(stored: Mapping[str, Any], spec: Mapping[str, Any], base: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, how in spec.items():
        if how == 0:
            out[key] = stored[key]
            continue
        if base is None or key not in base:
            raise CallStorageError(f"request key {key!r} refers to a base that does not hold it")
        if how == 1:
            out[key] = base[key]
        elif isinstance(how, list):
            out[key] = list(base[key][: how[0]]) + list(stored[key])
        elif isinstance(how, dict):
            out[key] = _apply(stored[key], how, base[key])
        else:
            raise CallStorageError(f"request key {key!r}: unknown delta spec {how!r}")
    return out


# -- the writer's side -----------------------------------------------------------------------
def encode_call(row: dict[str, Any], bases: Iterable[CallBase]) -> dict[str, Any]:
    """``row`` (a full ``model_calls`` row) stored against the best of ``bases`` (newest first).

    The best base shares the most prompt tokens; a base that shares nothing is not used.
    Returns a new row with ``base_index``/``delta`` set (or NULL: stored in full).
    """
    prompt = row.get("prompt_token_ids")
    request = row.get("request")
    best: CallBase | None = None
    best_n = -1
    for base in bases:
        if base.index >= row["index"]:
            continue
        n = _shared_with_base(prompt, base) if prompt else 0
        if n > best_n:
            best, best_n = base, n
            if prompt and base.prompt_token_ids is not None and n >= len(base.prompt_token_ids):
                break  # extends this base's whole prompt: as good as it gets
    out = {**row, "base_index": None, "delta": None}
    if best is None:
        return out
    if prompt and best_n < MIN_SHARED_TOKENS:
        return out
    delta: dict[str, Any] = {"prompt": best_n if prompt else None}
    shares = bool(prompt)
    if isinstance(request, dict) and isinstance(best.request, dict):
        stored, spec, req_shares = _diff(request, best.request, depth=1)
        if req_shares:
            out["request"] = stored
            delta["request"] = spec
            shares = True
    if not shares:
        return out
    if prompt:
        out["prompt_token_ids"] = prompt[best_n:]
    out["base_index"] = best.index
    out["delta"] = delta
    return out


def base_of(row: Mapping[str, Any]) -> CallBase | None:
    """What later calls can be stored against (a call with prompt token ids), else None."""
    if not row.get("prompt_token_ids"):
        return None
    return CallBase(index=row["index"], request=row.get("request"), prompt_token_ids=row["prompt_token_ids"],
                    response_token_ids=row.get("response_token_ids"))


# -- side files (DESIGN §4) ------------------------------------------------------------------
#: Columns a side file may hold for a row (they are NULL in the row then).
SIDE_COLUMNS = ("request", "response", "prompt_token_ids", "response_token_ids", "response_logprobs")


def side_ref(path: str, offset: int, length: int) -> str:
    """``model_calls.side_file`` of a payload stored as one JSON line at ``offset`` of ``path``."""
    return f"{path}#{offset}:{length}"


def read_side(ref: str) -> dict[str, Any]:
    """The payload columns a ``side_file`` reference points to."""
    path, _, span = ref.rpartition("#")
    offset, _, length = span.partition(":")
    try:
        with open(path, "rb") as fh:
            fh.seek(int(offset))
            data = fh.read(int(length))
        value = orjson.loads(data)
    except (OSError, ValueError) as exc:
        raise CallStorageError(f"side file {ref!r} cannot be read: {exc}") from exc
    if not isinstance(value, dict):
        raise CallStorageError(f"side file {ref!r} does not hold a JSON object")
    return value


# -- the readers' side -----------------------------------------------------------------------
def _fields(row: Any) -> dict[str, Any]:
    if isinstance(row, Mapping):
        out = dict(row)
    else:
        out = {name: getattr(row, name, None) for name in (*CALL_COLUMNS, "base_index", "delta")}
    if out.get("side_file"):  # large payloads live in a side file; the row holds the rest
        out.update(read_side(out["side_file"]))
    return out


def expand_calls(rows: Iterable[Any]) -> list[dict[str, Any]]:
    """Full calls (dicts of :data:`CALL_COLUMNS`) of one rollout's stored rows, in index order.

    ``rows``: ``ModelCall`` objects or mappings with the ``model_calls`` columns. Rows stored
    in full pass through; delta rows are rebuilt from their base; payloads in a side file
    (``side_file``) are read from it. No two calls share a
    mutable object (each request is its own copy), as when every row was parsed on its own.
    """
    full: dict[int, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for row in sorted((_fields(r) for r in rows), key=lambda r: r["index"]):
        base_index, delta = row.pop("base_index", None), row.pop("delta", None)
        if base_index is not None:
            base = full.get(base_index)
            if base is None:
                raise CallStorageError(f"rollout {row.get('rollout_id')} call {row['index']} is stored against "
                                       f"call {base_index}, which is not among its calls")
            delta = delta or {}
            if delta.get("prompt") is not None:
                row["prompt_token_ids"] = _base_sequence_head(base, delta["prompt"]) + list(row["prompt_token_ids"] or [])
            if delta.get("request") is not None:
                # A copy through JSON: a reader changing one call's request never changes another's.
                row["request"] = orjson.loads(orjson.dumps(_apply(row["request"] or {}, delta["request"], base["request"])))
        full[row["index"]] = row
        out.append({k: row.get(k) for k in CALL_COLUMNS})
    return out


def stored_bytes(row: Mapping[str, Any]) -> int:
    """Bytes of a row's JSON payload columns as stored (what linear storage saves on)."""
    total = 0
    for key in ("request", "response", "prompt_token_ids", "response_token_ids", "response_logprobs", "usage", "delta"):
        value = row.get(key)
        if value is not None:
            total += len(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
    return total
