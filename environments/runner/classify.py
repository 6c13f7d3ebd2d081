"""How a finished harness process becomes an outcome (DESIGN §5).

1. An outcome file the harness wrote (``openforge-outcome.json``, e.g. react) is trusted.
2. Exit 0 (or killed on the agent timeout) → go on to the verifier; so does a harness that
   stopped on its generation budget: the proxy refused a call once the rollout's budget was
   spent (its output names ``rollout_budget_exhausted``, training/proxy/budget.py), or the
   harness gives up on an answer cut at the per-call cap (Codex: "Incomplete response
   returned, reason: max_output_tokens"; Claude Code: "exceeded the N output token maximum").
3. Nonzero exit: its output names a context overflow or a malformed tool call from the
   engine (HTTP 400) → ``policy_error``; an engine/proxy failure (5xx, connection) →
   ``infra_error/engine_error``; anything else → ``infra_error/harness_crash``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from environments.records import ErrorKind, Outcome

_CONTEXT = re.compile(r"context[ _-]?(length|window)[ _-]?(exceeded|overflow)?|maximum context length"
                      r"|context_length_exceeded|prompt is too long|input is too long for|too many tokens",
                      re.IGNORECASE)
_MALFORMED = re.compile(r"(invalid|malformed|could not parse|failed to parse)\s+(tool[ _]?call|function[ _]?call)",
                        re.IGNORECASE)
_BUDGET = re.compile(r"rollout_budget_exhausted|incomplete response returned, reason: max_output_tokens"
                     r"|exceeded the \d+ output token maximum", re.IGNORECASE)
_ENGINE = re.compile(r"\b(50[0-4]|529)\b.{0,40}(error|internal|gateway|unavailable|overloaded)"
                     r"|connection refused|connection error|stream disconnected|ECONNREFUSED|APIConnectionError",
                     re.IGNORECASE)


@dataclass
class HarnessVerdict:
    """``proceed`` → run the verifier; else the rollout ends with ``status``/``error_kind``."""

    proceed: bool
    status: Outcome = Outcome.ok
    error_kind: str | None = None
    error: str | None = None


def read_outcome_file(path: Path) -> HarnessVerdict | None:
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        status = Outcome(doc.get("status", "ok"))
    except (ValueError, AttributeError):
        return None
    if status == Outcome.ok:
        return HarnessVerdict(proceed=True)
    return HarnessVerdict(proceed=False, status=status, error_kind=doc.get("error_kind"), error=doc.get("error"))


def classify_exit(name: str, returncode: int | None, timed_out: bool, output_tail: str,
                  outcome_file: Path) -> HarnessVerdict:
    reported = read_outcome_file(outcome_file)
    if reported is not None:
        return reported
    if timed_out or returncode == 0 or _BUDGET.search(output_tail):
        return HarnessVerdict(proceed=True)
    last = next((ln.strip() for ln in reversed(output_tail.splitlines()) if ln.strip()), "")
    detail = f"harness {name} exited with code {returncode}" + (f": {last[:300]}" if last else "")
    if _CONTEXT.search(output_tail):
        return HarnessVerdict(False, Outcome.policy_error, ErrorKind.context_overflow.value, detail)
    if _MALFORMED.search(output_tail):
        return HarnessVerdict(False, Outcome.policy_error, ErrorKind.malformed_tool_call.value, detail)
    if _ENGINE.search(output_tail):
        return HarnessVerdict(False, Outcome.infra_error, ErrorKind.engine_error.value, detail)
    return HarnessVerdict(False, Outcome.infra_error, ErrorKind.harness_crash.value, detail)
