"""Rollout registry and write-through recording of model calls into the task DB.

Every write (register, call, finish) goes through one writer task that drains whatever has
queued since its last commit and writes it in a single transaction (group commit). A caller
awaits its own write's commit before the proxy answers, so an acknowledged model call
survives a proxy restart; under load many calls share one commit.

Rows: ``rollouts`` (id, token_sha256, task/group/run, role, harness, status, n_calls, meta)
and ``model_calls`` (DESIGN §4), stored linearly: a call whose prompt extends one of the
rollout's last acknowledged calls is written as a reference to it plus what is new
(storage/calls.py), so a rollout's rows grow with its trajectory, not with its square;
``calls()`` expands them back to full calls. ``model_calls.request`` holds the chat body sent to the
engine (plus ``_client_request``, the caller's original body, when the caller spoke
Responses or Messages); ``response`` the engine's answer without token ids/logprobs, which
live in their own columns. Failed engine calls are recorded with ``status="error"``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import uuid
from array import array
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, func, select, update
from sqlalchemy.orm import Session

from storage.calls import CallBase, encode_call, expand_calls
from storage.db import SQLITE_BUSY_TIMEOUT_MS, make_engine
from storage.migrate import upgrade
from storage.models import ModelCall, Rollout, RolloutStatus
from training.engines.answer_parse import token_array
from training.proxy.budget import BudgetLedger, GenerationBudget, generated_tokens
from training.proxy.checkpoint import WalCheckpointer, no_autocheckpoint
from training.proxy.engine_clock import EngineClock
from training.proxy.errors import ProxyError
from training.proxy.rows import CallRows
from training.proxy.side_files import SideFiles

log = logging.getLogger(__name__)

_ROLLOUTS = Rollout.__table__
_CALLS = ModelCall.__table__
_REPORTABLE = {s.value for s in (RolloutStatus.ok, RolloutStatus.policy_error, RolloutStatus.infra_error,
                                 RolloutStatus.timeout)}


#: Batches of at most this many ops are written on the event loop on SQLite (when the
#: write lock is free); larger ones (heavy load) in the writer thread.
INLINE_MAX_OPS = 64
#: After an inline write fails (the DB locked by another process), this many batches go
#: through the writer thread before the next inline try.
INLINE_BACKOFF = 16

#: How many of a rollout's latest calls a new call is compared with for linear storage.
RECENT_BASES = 2


def _push_base(bases: deque[CallBase], base: CallBase, stored: dict[str, Any]) -> None:
    """Make ``base`` the newest; the base it wholly extends goes (the thread moved on: a later
    call shares at least as much with ``base``), so one thread holds one base in memory and
    a second thread (a side call, a branch) keeps its own."""
    shared = (stored.get("delta") or {}).get("prompt")
    if stored.get("base_index") is not None and shared is not None:
        for parent in bases:
            if parent.index == stored["base_index"] and shared >= len(parent.prompt_token_ids or ()):
                bases.remove(parent)
                break
    bases.appendleft(base)


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class RolloutState:
    """What the proxy keeps in memory about one rollout it serves."""

    rollout_id: str
    finished: bool = False
    #: The runner said the agent phase is over: model calls are refused from here on.
    agent_done: bool = False
    refused_calls: int = 0
    next_index: int = 0
    started_calls: int = 0
    engine_errors: int = 0
    ledger: BudgetLedger = field(default_factory=lambda: BudgetLedger(GenerationBudget()))
    #: Wall time the engine spent answering this rollout's calls (engine_clock.py).
    engine_clock: EngineClock = field(default_factory=EngineClock)
    #: The last acknowledged calls with token ids (newest first): what the next call is
    #: stored against. Two: the main thread and one side call (a title, a sub-agent).
    bases: deque[CallBase] = field(default_factory=lambda: deque(maxlen=RECENT_BASES))


@dataclass
class CallRecord:
    """One model call as it goes into ``model_calls``."""

    api: str
    model: str | None
    request: dict[str, Any]
    response: dict[str, Any] | None
    #: A list of ints or an ``array('q')`` (``token_array``: what the proxy passes, see model_call.py).
    prompt_token_ids: list[int] | array | None = None
    response_token_ids: list[int] | array | None = None
    response_logprobs: list[float] | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    latency_ms: float | None = None
    policy_version: int | None = None
    status: str = "ok"
    error: str | None = None
    engine_error: bool = False


@dataclass
class _Op:
    kind: str  # insert_rollout | insert_call | finish
    data: dict[str, Any]
    future: asyncio.Future = field(repr=False)


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.isoformat()


def rollout_dict(row: Rollout) -> dict[str, Any]:
    return {
        "rollout_id": row.id, "status": row.status, "reward": row.reward, "n_calls": row.n_calls,
        "task_id": row.task_id, "group_id": row.group_id, "run_id": row.run_id, "role": row.role,
        "harness": row.harness, "model": row.model, "error_kind": row.error_kind, "error": row.error,
        "metadata": row.meta or {}, "timings": row.timings or {}, "logs_path": row.logs_path,
        "seconds": row.seconds, "live": row.finished_at is None,
        "created_at": _iso(row.created_at), "finished_at": _iso(row.finished_at),
    }


_CALL_DICT_KEYS = ("index", "api", "model", "request", "response", "prompt_token_ids", "response_token_ids",
                   "response_logprobs", "finish_reason", "usage", "latency_ms", "policy_version", "status", "error")


def call_dict(call: dict[str, Any]) -> dict[str, Any]:
    """A full call (``storage.calls.expand_calls``) in the admin API's ``/calls`` format."""
    out = {k: call[k] for k in _CALL_DICT_KEYS}
    out["created_at"] = _iso(call["created_at"])
    return out


class Recorder:
    """Rollout registry + batched write-through recorder over one DB URL."""

    def __init__(self, db_url: str, *, max_calls_per_rollout: int = 2000, logs_dir: Path | None = None,
                 migrate: bool = True, default_budget: GenerationBudget | None = None,
                 linear: bool = True, side_files: bool = True, inline_writes: bool = True) -> None:
        self.db_url = db_url
        #: Store calls against earlier ones (storage/calls.py); False writes every call in full.
        self.linear = linear
        self.max_calls_per_rollout = max_calls_per_rollout
        self.default_budget = default_budget or GenerationBudget()
        self.logs_dir = logs_dir
        self._migrate = migrate
        self._db = make_engine(db_url)
        sqlite = self._db.dialect.name == "sqlite"
        database = self._db.url.database
        #: Large payloads beside a SQLite file (training/proxy/side_files.py); PostgreSQL keeps them.
        self.side_files = (SideFiles(Path(database).expanduser().resolve().with_name(Path(database).name + "-calls"))
                           if side_files and sqlite and database and database != ":memory:" else None)
        self._rows = CallRows(self._db.dialect, side=self.side_files)
        #: The writer thread's own connection, held across batches (a pool checkout and
        #: reset per batch cost more than a small batch's rows); dropped after an error.
        self._write_conn: Connection | None = None
        self._checkpointer = (WalCheckpointer(self._db, before=self.side_files.sync if self.side_files else None)
                              if sqlite else None)
        self._by_sha: dict[str, RolloutState] = {}
        self._pending: list[_Op] = []
        self._wake: asyncio.Event | None = None
        self._writer: asyncio.Task | None = None
        self._closing = False
        self._write_pool: ThreadPoolExecutor | None = None
        #: SQLite: small batches are written on the event loop (see ``_write``); PostgreSQL
        #: always in the writer thread (a network round trip would stall the loop).
        self._inline = sqlite and inline_writes
        #: Whether the writer connection waits on a locked database (its busy timeout; None: unknown).
        self._busy_wait: bool | None = None
        #: Batches still to go through the thread after an inline write failed.
        self._inline_skip = 0

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        if self._migrate:
            await asyncio.to_thread(upgrade, self.db_url, self._db)
        self._wake = asyncio.Event()
        self._closing = False
        # One dedicated writer thread: stays warm, and writes never queue behind reads.
        self._write_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="openforge-proxy-writer")
        self._writer = asyncio.create_task(self._run_writer(), name="openforge-proxy-writer")
        if self._checkpointer is not None:
            self._checkpointer.start()

    async def stop(self) -> None:
        self._closing = True
        if self._wake is not None:
            self._wake.set()
        if self._writer is not None:
            await self._writer
            self._writer = None
        if self._write_pool is not None:
            await asyncio.get_running_loop().run_in_executor(self._write_pool, self._drop_write_conn)
            self._write_pool.shutdown(wait=True)
            self._write_pool = None
        if self._checkpointer is not None:
            await self._checkpointer.stop()
        await asyncio.to_thread(self._db.dispose)

    # -- writer --------------------------------------------------------------------------
    async def _submit(self, kind: str, data: dict[str, Any]) -> Any:
        if self._writer is None or self._wake is None:
            raise ProxyError(503, "proxy recorder is not running")
        fut = asyncio.get_running_loop().create_future()
        self._pending.append(_Op(kind, data, fut))
        self._wake.set()
        return await fut

    async def _run_writer(self) -> None:
        assert self._wake is not None
        while True:
            if not self._pending:
                if self._closing:
                    return
                await self._wake.wait()
                self._wake.clear()
                continue
            batch, self._pending = self._pending, []
            await self._write(batch)
            if self._checkpointer is not None:
                self._checkpointer.wrote()

    async def _write(self, batch: list[_Op]) -> None:
        if self._inline_skip:
            self._inline_skip -= 1
        elif self._inline and len(batch) <= INLINE_MAX_OPS:
            # SQLite: apply on the event loop when the write lock is free at once. Handing the
            # batch to the writer thread and back cost ~0.2 ms of wake-ups per call on this box
            # against ~0.09 ms for the write itself (py-spy, sequential small calls).
            try:
                results = self._apply(batch, wait=False)
            except Exception:  # locked by another process, or a bad op: the thread path decides
                log.debug("inline write of %d ops failed; through the writer thread", len(batch), exc_info=True)
                self._inline_skip = INLINE_BACKOFF  # another writer is busy on this DB: wait in the thread a while
            else:
                for op, result in zip(batch, results):
                    if not op.future.done():
                        op.future.set_result(result)
                return
        try:
            results = await asyncio.get_running_loop().run_in_executor(self._write_pool, self._apply, batch)
        except Exception:
            log.warning("batched write of %d ops failed; retrying one by one", len(batch), exc_info=True)
            for op in batch:
                try:
                    (result,) = await asyncio.get_running_loop().run_in_executor(self._write_pool, self._apply, [op])
                except Exception as exc:  # noqa: BLE001
                    if not op.future.done():
                        op.future.set_exception(exc)
                else:
                    if not op.future.done():
                        op.future.set_result(result)
            return
        for op, result in zip(batch, results):
            if not op.future.done():
                op.future.set_result(result)

    def _apply(self, batch: list[_Op], wait: bool = True) -> list[Any]:
        """Apply ops in order in one transaction (in the writer thread; SQLite: also inline).

        SQLAlchemy Core for the rare ops; runs of consecutive calls go out as one
        precompiled executemany (training/proxy/rows.py: Core's per-statement work was most
        of a small call's recording cost). ``wait=False`` (SQLite, on the event loop): the
        connection's busy timeout is 0, so ``BEGIN IMMEDIATE`` fails at once instead of
        blocking the loop while another process holds the write lock.
        """
        if self._write_conn is None:
            self._write_conn = self._db.connect()
            no_autocheckpoint(self._write_conn)  # checkpoints run beside the writer (training/proxy/checkpoint.py)
            self._busy_wait = None  # a pooled connection may come back with either timeout: set it below
        conn = self._write_conn
        if self._inline and wait != self._busy_wait:
            timeout = SQLITE_BUSY_TIMEOUT_MS if wait else 0
            conn.connection.driver_connection.execute(f"PRAGMA busy_timeout = {timeout}")
            self._busy_wait = wait
        try:
            if self._inline and all(op.kind == "insert_call" and not op.data.get("engine_error") for op in batch):
                self._apply_calls_dbapi(conn, [op.data for op in batch])
                return [None] * len(batch)
            with conn.begin():
                i = 0
                while i < len(batch):
                    op = batch[i]
                    if op.kind == "insert_call":
                        j = i
                        while j < len(batch) and batch[j].kind == "insert_call":
                            j += 1
                        self._insert_calls(conn, [o.data for o in batch[i:j]])
                        i = j
                        continue
                    if op.kind == "insert_rollout":
                        conn.execute(_ROLLOUTS.insert(), [op.data])
                    elif op.kind == "finish":
                        self._apply_finish(conn, op.data)
                    elif op.kind == "meta":
                        self._apply_meta(conn, op.data)
                    i += 1
        except Exception:
            self._drop_write_conn()  # a broken connection is not reused; the retry gets a fresh one
            raise
        return [None] * len(batch)

    def _apply_calls_dbapi(self, conn: Connection, ops: list[dict[str, Any]]) -> None:
        """SQLite, a batch of calls only (the hot path): one transaction on the driver's
        connection (autocommit mode, so ``BEGIN IMMEDIATE`` / ``COMMIT`` are ours), without
        SQLAlchemy's per-statement and transaction bookkeeping (~0.1 ms a batch here)."""
        raw = conn.connection.driver_connection
        raw.execute("BEGIN IMMEDIATE")
        try:
            self._rows.insert(raw, [o["row"] for o in ops])
            counts: dict[str, int] = {}
            for o in ops:
                rollout_id = o["row"]["rollout_id"]
                counts[rollout_id] = max(counts.get(rollout_id, 0), o["n_calls"])
            self._rows.set_counts(raw, counts)
            raw.execute("COMMIT")
        except BaseException:
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise

    def _drop_write_conn(self) -> None:
        conn, self._write_conn = self._write_conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # it is being thrown away
                log.debug("closing the writer's connection failed", exc_info=True)

    def _insert_calls(self, conn: Connection, ops: list[dict[str, Any]]) -> None:
        self._rows.insert(conn, [o["row"] for o in ops])
        counts: dict[str, int] = {}
        for o in ops:
            rollout_id = o["row"]["rollout_id"]
            counts[rollout_id] = max(counts.get(rollout_id, 0), o["n_calls"])
            if o.get("engine_error"):
                conn.execute(update(_ROLLOUTS).where(_ROLLOUTS.c.id == rollout_id).values(
                    status=RolloutStatus.infra_error.value, error_kind="engine_error", error=o["row"].get("error")))
        self._rows.set_counts(conn, counts)

    @staticmethod
    def _apply_meta(conn: Connection, data: dict[str, Any]) -> None:
        row = conn.execute(select(_ROLLOUTS.c.metadata).where(_ROLLOUTS.c.id == data["rollout_id"])).first()
        if row is not None:
            meta = {**(row[0] or {}), **data["meta"]}
            conn.execute(update(_ROLLOUTS).where(_ROLLOUTS.c.id == data["rollout_id"]).values(metadata=meta))

    @staticmethod
    def _apply_finish(conn: Connection, data: dict[str, Any]) -> None:
        row = conn.execute(select(_ROLLOUTS).where(_ROLLOUTS.c.id == data["rollout_id"])).mappings().first()
        if row is None:
            raise ProxyError(404, f"rollout {data['rollout_id']!r} not found")
        meta = dict(row["metadata"] or {})
        meta["reported_status"] = data["status"]
        status, error_kind, error = data["status"], data.get("error_kind"), data.get("error")
        if row["status"] == RolloutStatus.infra_error.value and row["error_kind"] == "engine_error":
            # Engine errors are sticky: the rollout saw an infra failure whatever the runner says.
            status, error_kind, error = row["status"], row["error_kind"], row["error"] or error
        now = datetime.now(UTC)
        created = row["created_at"]
        if created is not None and created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        values: dict[str, Any] = {
            "status": status, "error_kind": error_kind, "error": error, "reward": data.get("reward"),
            "metadata": meta, "finished_at": now, "seconds": (now - created).total_seconds() if created else None,
        }
        if data.get("timings"):
            values["timings"] = {**(row["timings"] or {}), **data["timings"]}
        if data.get("logs_path"):
            values["logs_path"] = data["logs_path"]
        conn.execute(update(_ROLLOUTS).where(_ROLLOUTS.c.id == data["rollout_id"]).values(**values))

    # -- rollouts ------------------------------------------------------------------------
    async def register(self, *, rollout_id: str | None = None, task_id: str | None = None, group_id: str | None = None,
                       run_id: str | None = None, role: str | None = None, harness: str | None = None,
                       model: str | None = None, metadata: dict[str, Any] | None = None,
                       budget: GenerationBudget | None = None) -> tuple[RolloutState, str]:
        """Create the rollout row (durably) and return its state and fresh token.

        ``budget`` (over the recorder's default) is kept in ``metadata["budget"]``, so a
        restarted proxy applies the same caps.
        """
        rollout_id = rollout_id or uuid.uuid4().hex
        token = "ofr_" + secrets.token_urlsafe(32)
        sha = token_sha256(token)
        effective = (budget or GenerationBudget()).over(self.default_budget)
        meta = dict(metadata or {})
        if effective.to_dict():
            meta["budget"] = effective.to_dict()
        row = {"id": rollout_id, "token_sha256": sha, "task_id": task_id, "group_id": group_id, "run_id": run_id,
               "role": role or "train", "harness": harness, "model": model, "metadata": meta,
               "status": RolloutStatus.running.value}
        try:
            await self._submit("insert_rollout", row)
        except ProxyError:
            raise
        except Exception as exc:
            raise ProxyError(409, f"cannot register rollout {rollout_id!r}: {type(exc).__name__}") from exc
        state = RolloutState(rollout_id=rollout_id, ledger=BudgetLedger(effective))
        self._by_sha[sha] = state
        return state, token

    async def resolve(self, token: str | None) -> RolloutState:
        """The live rollout ``token`` belongs to; 401 unknown, 403 finished."""
        if not token:
            raise ProxyError(401, "missing rollout token (path /rollouts/<token>/v1, bearer or x-api-key)")
        sha = token_sha256(token)
        state = self._by_sha.get(sha)
        if state is None:
            state = await asyncio.to_thread(self._load_state, sha)
            if state is None:
                raise ProxyError(401, "unknown rollout token")
            self._by_sha[sha] = state
        if state.finished:
            raise ProxyError(403, f"rollout {state.rollout_id} is finished; its token is no longer valid")
        return state

    def _load_state(self, sha: str) -> RolloutState | None:
        with Session(self._db) as session:
            row = session.execute(select(Rollout).where(Rollout.token_sha256 == sha)).scalar_one_or_none()
            if row is None:
                return None
            last = session.execute(select(func.max(ModelCall.index)).where(ModelCall.rollout_id == row.id)).scalar()
            n = 0 if last is None else last + 1
            errors = 1 if (row.status == RolloutStatus.infra_error.value and row.error_kind == "engine_error") else 0
            ledger = BudgetLedger(GenerationBudget.from_mapping((row.meta or {}).get("budget")))
            if ledger.budget.max_total_tokens is not None:
                usages = session.execute(select(ModelCall.usage).where(ModelCall.rollout_id == row.id)).scalars()
                ledger.generated = sum(generated_tokens({"usage": u}) for u in usages if u)
            meta = row.meta or {}
            return RolloutState(rollout_id=row.id, finished=row.finished_at is not None, next_index=n,
                                agent_done="agent_done_at" in meta, refused_calls=int(meta.get("refused_after_agent_done", 0)),
                                started_calls=n, engine_errors=errors, ledger=ledger)

    async def mark_agent_done(self, state: RolloutState) -> None:
        """Revoke the token for model calls (issue 14); the finish report is still accepted."""
        if not state.agent_done:
            state.agent_done = True
            state.bases.clear()
            await self._submit("meta", {"rollout_id": state.rollout_id,
                                        "meta": {"agent_done_at": datetime.now(UTC).isoformat()}})

    async def refuse_after_agent_done(self, state: RolloutState) -> ProxyError:
        """Count (durably, in the rollout's metadata) a model call made after agent_done."""
        state.refused_calls += 1
        await self._submit("meta", {"rollout_id": state.rollout_id,
                                    "meta": {"refused_after_agent_done": state.refused_calls}})
        return ProxyError(403, f"rollout {state.rollout_id}: the agent phase is over; its token no longer "
                               "serves model calls", code="token_revoked")

    def begin_call(self, state: RolloutState) -> None:
        """Count a call against the rollout's limit before it reaches the engine."""
        if state.started_calls >= self.max_calls_per_rollout:
            raise ProxyError(400, f"rollout {state.rollout_id} reached its limit of {self.max_calls_per_rollout} model calls",
                             code="too_many_calls")
        state.started_calls += 1

    async def record(self, state: RolloutState, call: CallRecord) -> int:
        """Write one call durably; returns its index in the rollout."""
        index = state.next_index
        state.next_index += 1
        if call.engine_error:
            state.engine_errors += 1
        row = {
            "rollout_id": state.rollout_id, "index": index, "api": call.api, "model": call.model,
            "request": call.request, "response": call.response, "prompt_token_ids": call.prompt_token_ids,
            "response_token_ids": call.response_token_ids, "response_logprobs": call.response_logprobs,
            "finish_reason": call.finish_reason, "usage": call.usage, "latency_ms": call.latency_ms,
            "policy_version": call.policy_version, "status": call.status, "error": call.error,
            "created_at": datetime.now(UTC), "base_index": None, "delta": None,
        }
        stored, base = self._encode(state, row) if self.linear else (row, None)
        await self._submit("insert_call", {"row": stored, "n_calls": state.next_index, "engine_error": call.engine_error})
        # Only an acknowledged (committed) call becomes a base: no row ever refers to a lost one.
        if base is not None and not state.finished and not state.agent_done:
            _push_base(state.bases, base, stored)
        return index

    @staticmethod
    def _encode(state: RolloutState, row: dict[str, Any]) -> tuple[dict[str, Any], CallBase | None]:
        """``row`` stored against the rollout's bases (``storage.calls.encode_call``) and the base
        it leaves for later calls. Token ids are compared and kept as arrays (:func:`token_array`);
        the stored row holds them as given (list or array: ``rows.json_text`` writes both alike)."""
        prompt = row["prompt_token_ids"]
        ids = token_array(prompt)
        response = token_array(row["response_token_ids"])
        if (prompt and ids is None) or (row["response_token_ids"] and response is None):
            return row, None  # ids no array holds (never from an engine): stored in full, never a base
        base = None if ids is None else CallBase(index=row["index"], request=row["request"], prompt_token_ids=ids,
                                                 response_token_ids=response)
        if not state.bases:
            return row, base
        stored = encode_call({**row, "prompt_token_ids": ids}, state.bases)
        shared = (stored.get("delta") or {}).get("prompt")
        stored["prompt_token_ids"] = prompt if stored["base_index"] is None or shared is None else prompt[shared:]
        return stored, base

    async def finish(self, state: RolloutState, *, status: str, reward: float | None = None,
                     error_kind: str | None = None, error: str | None = None, logs: str | None = None,
                     timings: dict[str, float] | None = None) -> dict[str, Any]:
        if status not in _REPORTABLE:
            raise ProxyError(400, f"status must be one of {sorted(_REPORTABLE)}, got {status!r}", param="status")
        if state.finished:
            raise ProxyError(409, f"rollout {state.rollout_id} is already finished")
        state.finished = True
        state.bases.clear()
        logs_path = None
        if logs and self.logs_dir is not None:
            path = self.logs_dir / state.rollout_id / "runner.log"
            await asyncio.to_thread(_write_text, path, logs)
            logs_path = str(path)
        await self._submit("finish", {"rollout_id": state.rollout_id, "status": status, "reward": reward,
                                      "error_kind": error_kind, "error": error, "logs_path": logs_path,
                                      "timings": timings})
        return await self.get(state.rollout_id)

    async def state_for_id(self, rollout_id: str) -> RolloutState:
        for state in self._by_sha.values():
            if state.rollout_id == rollout_id:
                return state
        sha = await asyncio.to_thread(self._sha_for_id, rollout_id)
        if sha is None:
            raise ProxyError(404, f"rollout {rollout_id!r} not found")
        state = await asyncio.to_thread(self._load_state, sha)
        assert state is not None
        self._by_sha[sha] = state
        return state

    def _sha_for_id(self, rollout_id: str) -> str | None:
        with Session(self._db) as session:
            row = session.get(Rollout, rollout_id)
            return None if row is None else row.token_sha256

    # -- reads ---------------------------------------------------------------------------
    async def get(self, rollout_id: str) -> dict[str, Any]:
        def read() -> dict[str, Any] | None:
            with Session(self._db) as session:
                row = session.get(Rollout, rollout_id)
                return None if row is None else rollout_dict(row)

        out = await asyncio.to_thread(read)
        if out is None:
            raise ProxyError(404, f"rollout {rollout_id!r} not found")
        return out

    async def list(self, *, live_only: bool = True, limit: int = 1000) -> list[dict[str, Any]]:
        def read() -> list[dict[str, Any]]:
            with Session(self._db) as session:
                q = select(Rollout).order_by(Rollout.created_at.desc()).limit(limit)
                if live_only:
                    q = q.where(Rollout.finished_at.is_(None))
                return [rollout_dict(r) for r in session.execute(q).scalars()]

        return await asyncio.to_thread(read)

    async def calls(self, rollout_id: str) -> list[dict[str, Any]]:
        def read() -> list[dict[str, Any]] | None:
            with Session(self._db) as session:
                if session.get(Rollout, rollout_id) is None:
                    return None
                q = select(_CALLS).where(_CALLS.c.rollout_id == rollout_id).order_by(_CALLS.c.index)
                return [call_dict(c) for c in expand_calls(session.execute(q).mappings())]

        out = await asyncio.to_thread(read)
        if out is None:
            raise ProxyError(404, f"rollout {rollout_id!r} not found")
        return out


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
