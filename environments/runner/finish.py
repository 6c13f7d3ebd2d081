"""Report the rollout's outcome to the proxy: ``POST /rollouts/<token>/finish`` (and ask it
how long its engine has spent on the rollout: ``GET /rollouts/<token>/engine-time``).

Retries briefly; failing to reach the proxy is logged, never fatal (the stdout report line
is the backend's source of truth).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

from environments.httpclient import TransportError, request
from environments.records import RunnerReport

log = logging.getLogger(__name__)

#: Environment variable that hands the runner its finish key. The runner takes it out of its
#: own environment at start, so no harness, jail or verifier process ever inherits it.
FINISH_KEY_ENV = "OPENFORGE_FINISH_KEY"
FINISH_KEY_HEADER = "X-OpenForge-Finish-Key"


def take_finish_key() -> str | None:
    """The finish key from the environment, removed from it (see :data:`FINISH_KEY_ENV`)."""
    return os.environ.pop(FINISH_KEY_ENV, None) or None


def finish_url(base_url: str, token: str, endpoint: str = "finish") -> str:
    """``.../rollouts/<token>/v1`` → ``.../rollouts/<token>/finish``; any other base URL →
    ``<origin>/rollouts/<token>/finish`` (``endpoint`` replaces ``finish``)."""
    base = base_url.rstrip("/")
    suffix = f"/rollouts/{token}/v1"
    if base.endswith(suffix):
        return base[: -len("/v1")] + "/" + endpoint
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, f"/rollouts/{token}/{endpoint}", "", ""))


async def _post(what: str, url: str, body: dict, headers: dict[str, str], *, attempts: int, timeout: float,
                backoff: float) -> bool:
    """POST ``body`` with retries on connection errors, 5xx and 429; True on 2xx, False on
    any other 4xx (retrying cannot help) or when the attempts run out."""
    for attempt in range(1, attempts + 1):
        try:
            resp = await request("POST", url, json=body, headers=headers, timeout=timeout)
            if resp.is_success:
                return True
            log.warning("%s %s → HTTP %d: %s", what, url, resp.status_code, resp.text[:200])
            if 400 <= resp.status_code < 500 and resp.status_code != 429:
                return False
        except TransportError as exc:
            log.warning("%s %s failed (attempt %d/%d): %s", what, url, attempt, attempts, exc)
        if attempt < attempts:
            await asyncio.sleep(backoff * 2 ** (attempt - 1))
    return False


async def post_agent_done(base_url: str, token: str, *, attempts: int = 3, timeout: float = 5.0) -> bool:
    """``POST /rollouts/<token>/agent-done``: the proxy revokes the token for model calls
    (the finish report is still accepted). True when the proxy acknowledged it."""
    return await _post("agent-done", finish_url(base_url, token, "agent-done"), {},
                       {"Authorization": f"Bearer {token}"}, attempts=attempts, timeout=timeout, backoff=0.2)


async def post_finish(base_url: str, token: str, report: RunnerReport, *, finish_key: str | None = None,
                      attempts: int = 3, timeout: float = 5.0, backoff: float = 0.5) -> bool:
    """True when the proxy accepted the report (2xx). ``finish_key``: the runner's key for it."""
    headers = {"Authorization": f"Bearer {token}", **({FINISH_KEY_HEADER: finish_key} if finish_key else {})}
    return await _post("finish", finish_url(base_url, token), report.model_dump(mode="json", exclude_none=True),
                       headers, attempts=attempts, timeout=timeout, backoff=backoff)


def engine_clock(base_url: str | None, token: str | None, *, timeout: float = 5.0) -> Callable[[], Awaitable[float]] | None:
    """The proxy's count of the seconds its engine spent answering this rollout, which the
    agent's timeout leaves out (environments/deadline.py); None without a proxy."""
    if not base_url or not token:
        return None
    url = finish_url(base_url, token, "engine-time")

    async def engine_seconds() -> float:
        resp = await request("GET", url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
        if not resp.is_success:
            raise TransportError(f"HTTP {resp.status_code} from {url}")
        return float(resp.json()["engine_seconds"])

    return engine_seconds
