"""The runner reports to the proxy's finish endpoint, and survives a proxy that is down."""

from __future__ import annotations

import socket
from pathlib import Path

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from environments.records import Outcome
from environments.runner.finish import finish_url
from tests.environments.runner.sandbox import make_sandbox, run_runner, write_file_task
from training.proxy.server import BackgroundUvicorn


class FinishRecorder(BackgroundUvicorn):
    """A stand-in for the proxy's finish route (fake at the proxy boundary)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict]] = []

        async def finish(request: Request) -> JSONResponse:
            body = orjson.loads(await request.body())
            self.calls.append((request.path_params["token"], request.headers.get("authorization", ""), body))
            return JSONResponse({"ok": True})

        super().__init__(Starlette(routes=[Route("/rollouts/{token}/finish", finish, methods=["POST"])]))


def test_finish_url_from_per_rollout_base_url() -> None:
    assert finish_url("http://h:1/rollouts/abc/v1", "abc") == "http://h:1/rollouts/abc/finish"
    assert finish_url("http://h:1/rollouts/abc/v1/", "abc") == "http://h:1/rollouts/abc/finish"
    assert finish_url("http://h:1/v1", "abc") == "http://h:1/rollouts/abc/finish"


async def test_report_is_posted_to_the_finish_endpoint(tmp_path: Path) -> None:
    sb = make_sandbox(write_file_task(tmp_path / "src"), tmp_path / "sb")
    with FinishRecorder() as proxy:
        run = await run_runner(sb, "oracle", extra=["--base-url", f"{proxy.url}/rollouts/tok-9/v1", "--token", "tok-9"])
    assert run.report.reward == 1.0
    assert len(proxy.calls) == 1
    token, auth, body = proxy.calls[0]
    assert token == "tok-9" and auth == "Bearer tok-9"
    assert body["reward"] == 1.0 and body["status"] == "ok" and body["harness"] == "oracle"
    assert "total" in body["timings"]


async def test_unreachable_proxy_is_not_fatal(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sb = make_sandbox(write_file_task(tmp_path / "src"), tmp_path / "sb")
    run = await run_runner(sb, "oracle", extra=["--base-url", f"http://127.0.0.1:{port}/rollouts/t/v1", "--token", "t"])
    assert run.report.status == Outcome.ok and run.report.reward == 1.0
    assert "could not report" in run.stderr
