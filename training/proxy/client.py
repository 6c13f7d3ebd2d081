"""Async admin client of the proxy's rollout lifecycle API (register, get, calls, finish)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import httpx

from training.proxy.budget import GenerationBudget


class ProxyClientError(RuntimeError):
    """The proxy refused an admin call; carries the HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"proxy answered {status}: {message}")
        self.status = status


@dataclass(frozen=True)
class Registration:
    """A registered rollout: its id, its token and the base URL (ends in ``/v1``) a harness uses."""

    rollout_id: str
    token: str
    base_url: str
    finish_key: str | None = None  # only the runner gets it (POST /rollouts/<token>/finish)

    @property
    def anthropic_base_url(self) -> str:
        """The base URL an Anthropic client wants (it appends ``/v1/messages`` itself)."""
        return self.base_url.removesuffix("/v1")


class ProxyAdminClient:
    """``async with ProxyAdminClient(url, admin_key) as c: reg = await c.register(...)``.

    ``budget`` is the generation budget sent with every registration that names none itself
    (the caller's preset caps; the proxy's own defaults apply where it sets none).
    """

    def __init__(self, url: str, admin_key: str, *, timeout: float = 30.0,
                 budget: GenerationBudget | None = None) -> None:
        self.url = url.rstrip("/")
        self.budget = budget or GenerationBudget()
        self._http = httpx.AsyncClient(base_url=self.url, timeout=timeout,
                                       headers={"authorization": f"Bearer {admin_key}"})

    async def _json(self, method: str, path: str, **kw: Any) -> Any:
        resp = await self._http.request(method, path, **kw)
        if resp.status_code >= 400:
            try:
                err = resp.json().get("error", {})
                message = err.get("message") if isinstance(err, dict) else str(err)
            except ValueError:
                message = resp.text
            raise ProxyClientError(resp.status_code, message or resp.text)
        return resp.json()

    async def register(self, task_id: str | None = None, group_id: str | None = None, run_id: str | None = None,
                       role: str | None = None, harness: str | None = None, metadata: dict[str, Any] | None = None,
                       *, rollout_id: str | None = None, model: str | None = None,
                       budget: GenerationBudget | None = None) -> Registration:
        caps = (budget or self.budget).to_dict()
        body = {"task_id": task_id, "group_id": group_id, "run_id": run_id, "role": role, "harness": harness,
                "metadata": metadata or {}, "rollout_id": rollout_id, "model": model, "budget": caps or None}
        out = await self._json("POST", "/admin/rollouts", json={k: v for k, v in body.items() if v is not None})
        return Registration(out["rollout_id"], out["token"], out["base_url"], out.get("finish_key"))

    async def get(self, rollout_id: str) -> dict[str, Any]:
        return await self._json("GET", f"/admin/rollouts/{rollout_id}")

    async def engine_seconds(self, rollout_id: str) -> float:
        """Wall seconds the engine has spent answering the rollout's calls (engine_clock.py)."""
        return float((await self._json("GET", f"/admin/rollouts/{rollout_id}/engine-time"))["engine_seconds"])

    async def calls(self, rollout_id: str) -> list[dict[str, Any]]:
        return await self._json("GET", f"/admin/rollouts/{rollout_id}/calls")

    async def live(self) -> list[dict[str, Any]]:
        return await self._json("GET", "/admin/rollouts", params={"status": "live"})

    async def finish(self, rollout_id: str, *, status: str = "ok", reward: float | None = None,
                     error_kind: str | None = None, error: str | None = None, logs: str | None = None) -> dict[str, Any]:
        body = {"status": status, "reward": reward, "error_kind": error_kind, "error": error, "logs": logs}
        return await self._json("POST", f"/admin/rollouts/{rollout_id}/finish", json=body)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
