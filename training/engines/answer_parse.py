"""Parse an engine's chat answer with its prompt ids straight into a C array.

vLLM's answer (``return_token_ids``) carries the whole prompt's token ids at the top level:
~60k ints at the end of a long agent trajectory, ~380 KB of JSON. Parsed by ``orjson`` they
become 60k Python ints in a list, which the proxy then copies into an ``array('q')``
(:func:`token_array`, the recorder's form of them) so the garbage collector never walks them: ~2 ms
of CPU a call at that size, half the proxy's own time per call (bench/proxy.py, codex and
claude workloads, docs/proxy-bench.md). Here the ids' span is cut out of the bytes and parsed
by numpy's C text reader, the rest by ``orjson``: about half that time, and no list is made.

Any doubt falls back to one plain ``orjson.loads`` of the whole answer: the key found more
than once, the span not a flat list of integers, the rest not an object whose
``prompt_token_ids`` is the span cut out.
"""

from __future__ import annotations

import re
from array import array
from typing import Any

import numpy as np
import orjson

#: The key of the answer's prompt ids with the list's opening bracket. Inside a JSON string
#: a quote is escaped (``\"``), so a model that writes this text never matches it.
_PROMPT_IDS = re.compile(rb'"prompt_token_ids"\s*:\s*\[')

#: What a JSON list of integers never holds but numpy's reader takes (fractions, exponents, +).
_NOT_INTEGERS = (b".", b"e", b"E", b"+")
_INT64 = np.iinfo(np.int64)
_COMMA = ord(",")


def loads_chat_answer(content: bytes) -> Any:
    """The answer as ``orjson.loads`` gives it, except that a top-level ``prompt_token_ids``
    list of 64-bit integers comes as an ``array('q')``."""
    match = _PROMPT_IDS.search(content)
    if match is None or _PROMPT_IDS.search(content, match.end()) is not None:
        return _plain(content)
    start = match.end()
    end = content.find(b"]", start)
    ids = None if end < 0 else parse_int_list(content[start:end])
    if ids is None:
        return _plain(content)
    try:
        rest = orjson.loads(b"".join((content[:start - 1], b"null", content[end + 1:])))
    except orjson.JSONDecodeError:
        return _plain(content)  # raises the error a plain parse gives
    if not isinstance(rest, dict) or "prompt_token_ids" not in rest or rest["prompt_token_ids"] is not None:
        return _plain(content)  # the key was not the answer's own (a nested object's)
    rest["prompt_token_ids"] = ids
    return rest


def _plain(content: bytes) -> Any:
    """One ``orjson.loads`` of the whole answer, its top-level prompt ids then made an array
    when they can be one (so the type does not depend on which path parsed them)."""
    out = orjson.loads(content)
    ids = out.get("prompt_token_ids") if isinstance(out, dict) else None
    if isinstance(ids, list) and (packed := token_array(ids)) is not None:
        out["prompt_token_ids"] = packed
    return out


def token_array(ids: Any) -> array | None:
    """Token ids as a C array of 64-bit ints; None when they cannot be one (no ids, or not all
    ints of 64 bits). The recorder's form of a call's token ids: 8 bytes a token instead of
    ~36, a prefix compare as one memcmp instead of a compare per element, and nothing the
    garbage collector walks. Held as lists of ints, the ~60k-token prompts alive at once (in
    flight, and each rollout's bases) made every young-generation collection walk millions of
    items: ~2 ms of proxy CPU a call at 64 concurrent 60k-token rollouts (bench/proxy_profile.py)."""
    if not ids:
        return None
    if type(ids) is array and ids.typecode == "q":
        return ids
    out = array("q")
    try:
        out.fromlist(ids)
    except (TypeError, OverflowError):
        return None
    return out


def parse_int_list(span: bytes) -> array | None:
    """The comma-separated integers of ``span`` (a JSON list's inside) as ``array('q')``;
    None unless every item is a 64-bit integer written as JSON writes one."""
    if not span.strip() or any(c in span for c in _NOT_INTEGERS):
        return None
    items = int(np.count_nonzero(np.frombuffer(span, dtype=np.uint8) == _COMMA)) + 1  # 30x bytes.count here
    try:
        values = np.fromstring(span, dtype=np.int64, sep=",")
    except (ValueError, DeprecationWarning):
        return None
    if values.size != items:
        return None  # numpy stops at the first item it cannot read (a warning, hidden by default)
    if values.max() == _INT64.max or values.min() == _INT64.min:
        return None  # numpy saturates what does not fit in 64 bits
    out = array("q")
    out.frombytes(values.tobytes())
    return out
