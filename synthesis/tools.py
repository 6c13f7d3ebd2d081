"""The tools synthesis agents get, as :class:`AgentTool` lists shared by every backend.

- proposal tools: list proposals, append a proposal, score one (DB access);
- build tools: list/read/write files inside one task's staging dir, validate it, and run
  the oracle / no-op check through the injected :class:`TaskChecker`;
  with a test harness configured, ``run_check`` also rolls out the test model and returns
  the tail of its logs (trajectory, verifier output).
Paths are confined to the staging dir; nothing else on disk is reachable.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from environments.taskdir import validate_task
from storage.db import session_scope
from storage.models import Candidate
from synthesis.checker import NOOP, ORACLE, CheckOutcome, TaskChecker
from synthesis.runtime.base import AgentTool, ToolError
from synthesis.store import add_candidate

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 256_000


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def proposal_tools(engine: Engine, *, run_id: str, domain: str, purpose: str, proposer: str,
                   services: list[str], asset_refs: list[str], added: list[int]) -> list[AgentTool]:
    """list_proposals / append_proposal over the candidates table (ids appended go to ``added``)."""

    async def list_proposals(args: dict[str, Any]) -> Any:
        limit = int(args.get("limit", 30))
        with session_scope(engine) as session:
            rows = session.execute(
                select(Candidate.id, Candidate.instruction, Candidate.status)
                .where(Candidate.domain == domain).order_by(Candidate.id.desc()).limit(limit)
            ).all()
        return [{"id": i, "instruction": t, "status": s} for i, t, s in rows]

    async def append_proposal(args: dict[str, Any]) -> Any:
        instruction = str(args.get("instruction", "")).strip()
        if len(instruction.split()) < 5:
            raise ToolError("instruction: too short (write a complete, checkable task)")
        used = [s for s in args.get("services", []) if isinstance(s, str)]
        unknown = sorted(set(used) - set(services)) if services else []
        if unknown:
            raise ToolError(f"services: unknown {unknown} (available: {services})")
        cid = add_candidate(
            engine, run_id=run_id, domain=domain, instruction=instruction, category=args.get("category"),
            params={"services": used, "source": proposer}, asset_refs=asset_refs, proposer=proposer, purpose=purpose,
        )
        if cid is None:
            return {"ok": False, "duplicate": True, "message": "an identical instruction already exists"}
        added.append(cid)
        return {"ok": True, "id": cid}

    return [
        AgentTool("list_proposals", "List recent task proposals of this domain (to avoid repeating them).",
                  _obj({"limit": {"type": "integer", "minimum": 1, "maximum": 200}}, []), list_proposals),
        AgentTool("append_proposal", "Append one task proposal (a complete instruction for the agent under test).",
                  _obj({"instruction": {"type": "string"}, "category": {"type": "string"},
                        "services": {"type": "array", "items": {"type": "string"}}}, ["instruction"]),
                  append_proposal),
    ]


def judge_tools(scores: dict[str, float]) -> list[AgentTool]:
    """score_candidate: the LLM judge's verdict goes into ``scores`` (candidate id -> [0, 1])."""

    async def score_candidate(args: dict[str, Any]) -> Any:
        score = float(args["score"])
        if not 0.0 <= score <= 1.0:
            raise ToolError("score: must be within [0, 1]")
        scores[str(args["id"])] = score
        return {"ok": True}

    return [AgentTool("score_candidate", "Record the quality score (0..1) of one candidate by id.",
                      _obj({"id": {"type": "integer"}, "score": {"type": "number"}, "reason": {"type": "string"}},
                           ["id", "score"]), score_candidate)]


def _inside(root: Path, rel: str) -> Path:
    if not rel or Path(rel).is_absolute():
        raise ToolError(f"path {rel!r}: must be relative to the task dir")
    target = (root / rel).resolve()
    if root.resolve() not in target.parents and target != root.resolve():
        raise ToolError(f"path {rel!r}: escapes the task dir")
    return target


def build_tools(staging: Path, checker: TaskChecker, outcomes: list[CheckOutcome],
                test_harness: str | None = None) -> list[AgentTool]:
    """File tools confined to ``staging`` plus validate and oracle/no-op checks (and, with
    ``test_harness``, a rollout of the test model whose verifier output comes back)."""
    harnesses = [ORACLE, NOOP] + ([test_harness] if test_harness else [])

    async def list_files(args: dict[str, Any]) -> Any:
        return sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())

    async def read_file(args: dict[str, Any]) -> Any:
        path = _inside(staging, str(args["path"]))
        if not path.is_file():
            raise ToolError(f"{args['path']}: no such file")
        return path.read_text(encoding="utf-8", errors="replace")[:MAX_FILE_BYTES]

    async def write_file(args: dict[str, Any]) -> Any:
        path = _inside(staging, str(args["path"]))
        content = str(args.get("content", ""))
        if len(content.encode()) > MAX_FILE_BYTES:
            raise ToolError(f"{args['path']}: larger than {MAX_FILE_BYTES} bytes")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        if path.suffix == ".sh":
            path.chmod(0o755)
        return {"ok": True, "bytes": len(content.encode())}

    async def validate(args: dict[str, Any]) -> Any:
        problems = validate_task(staging)
        return {"ok": not problems, "problems": [str(p) for p in problems]}

    async def run_check(args: dict[str, Any]) -> Any:
        harness = str(args.get("harness", ORACLE))
        if harness not in harnesses:
            raise ToolError(f"harness {harness!r}: use one of {harnesses}")
        problems = validate_task(staging)
        if problems:
            raise ToolError("task dir invalid: " + "; ".join(str(p) for p in problems[:5]))
        outcome = await checker.check(staging, harness)
        outcomes.append(outcome)
        out = {"harness": harness, "reward": outcome.reward, "status": outcome.status,
               "error": outcome.error, "checks": outcome.checks}
        log_dir = Path(outcome.log_path) if outcome.log_path else None
        if harness not in (ORACLE, NOOP) and log_dir is not None and log_dir.is_dir():
            logs = sorted(p for p in log_dir.rglob("*") if p.is_file() and p.suffix in {".log", ".txt", ".json", ".jsonl"})
            out["log_tail"] = {p.relative_to(log_dir).as_posix(): p.read_text(errors="replace")[-2000:] for p in logs[:6]}
        return out

    path_arg = {"path": {"type": "string", "description": "Path relative to the task dir."}}
    return [
        AgentTool("list_files", "List the files of the task dir.", _obj({}, []), list_files),
        AgentTool("read_file", "Read a file of the task dir.", _obj(path_arg, ["path"]), read_file),
        AgentTool("write_file", "Create or replace a file of the task dir (.sh files become executable).",
                  _obj({**path_arg, "content": {"type": "string"}}, ["path", "content"]), write_file),
        AgentTool("validate_task", "Validate the task dir layout and task.toml.", _obj({}, []), validate),
        AgentTool("run_check", "Run the oracle (solution/solve.sh, must score 1.0), the no-op agent (must score 0.0)"
                  + (f" or a rollout of the test model ('{test_harness}': its trajectory/verifier logs come back)"
                     if test_harness else "") + " and return the verifier's reward and checks.",
                  _obj({"harness": {"type": "string", "enum": harnesses}}, ["harness"]), run_check),
    ]


def failure_report(checks: list[dict[str, Any]]) -> str:
    """Text the refine agent reads: each failing check of the last test."""
    return json.dumps(checks, indent=1, default=str)
