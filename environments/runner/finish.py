"""Report the rollout's outcome to the proxy: ``POST /rollouts/<token>/finish``.

Retries briefly; failing to reach the proxy is logged, never fatal (the stdout report line
is the backend's source of truth).
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit, urlunsplit

import httpx

from environments.records import RunnerReport

log = logging.getLogger(__name__)


def finish_url(base_url: str, token: str, endpoint: str = "finish") -> str:
    """``.../rollouts/<token>/v1`` → ``.../rollouts/<token>/finish``; any other base URL →
    ``<origin>/rollouts/<token>/finish`` (``endpoint`` replaces ``finish``)."""
    base = base_url.rstrip("/")
    suffix = f"/rollouts/{token}/v1"
    if base.endswith(suffix):
        return base[: -len("/v1")] + "/" + endpoint
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, f"/rollouts/{token}/{endpoint}", "", ""))


async def post_agent_done(base_url: str, token: str, *, attempts: int = 3, timeout: float = 5.0) -> bool:
    """``POST /rollouts/<token>/agent-done``: the proxy revokes the token for model calls
    (the finish report is still accepted). True when the proxy acknowledged it."""
    url = finish_url(base_url, token, "agent-done")
    async with httpx.AsyncClient(timeout=timeout) as client:
        for attempt in range(1, attempts + 1):
            try:
                resp = await client.post(url, json={}, headers={"Authorization": f"Bearer {token}"})
                if resp.is_success:
                    return True
                log.warning("agent-done %s → HTTP %d: %s", url, resp.status_code, resp.text[:200])
                if 400 <= resp.status_code < 500 and resp.status_code != 429:
                    return False
            except httpx.HTTPError as exc:
                log.warning("agent-done %s failed (attempt %d/%d): %s", url, attempt, attempts, exc)
            if attempt < attempts:
                await asyncio.sleep(0.2 * 2 ** (attempt - 1))
    return False


async def post_finish(base_url: str, token: str, report: RunnerReport, *, attempts: int = 3,
                      timeout: float = 5.0, backoff: float = 0.5) -> bool:
    """True when the proxy accepted the report (2xx)."""
    url = finish_url(base_url, token)
    body = report.model_dump(mode="json", exclude_none=True)
    async with httpx.AsyncClient(timeout=timeout) as client:
        for attempt in range(1, attempts + 1):
            try:
                resp = await client.post(url, json=body, headers={"Authorization": f"Bearer {token}"})
                if resp.is_success:
                    return True
                log.warning("finish %s → HTTP %d: %s", url, resp.status_code, resp.text[:200])
                if 400 <= resp.status_code < 500 and resp.status_code != 429:
                    return False
            except httpx.HTTPError as exc:
                log.warning("finish %s failed (attempt %d/%d): %s", url, attempt, attempts, exc)
            if attempt < attempts:
                await asyncio.sleep(backoff * 2 ** (attempt - 1))
    return False
