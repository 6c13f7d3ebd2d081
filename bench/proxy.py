"""Benchmark the recording proxy against a fast mock engine and against its peers.

Measures, in one run on one machine, for: the engine called directly, this proxy
(``openforge proxy serve``, recording every call to SQLite), LiteLLM proxy and
rllm-model-gateway (recording to SQLite):

- added latency: p50/p99 of sequential calls minus the direct engine's p50/p99;
- max throughput: completed requests/s with ``--concurrency`` callers for ``--duration`` s.

Peers are installed into their own venv (``--venv``, created on first use), never into the
project's .venv. Usage::

    .venv/bin/python bench/proxy.py [--duration 5] [--concurrency 64] [--n-latency 200] [--skip-peers]

Every server runs as its own process; the load generator is this process (aiohttp + uvloop:
an httpx load generator was itself the bottleneck, at ~3 ms of CPU per call here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_VENV = Path(os.environ.get("OPENFORGE_BENCH_VENV", "/tmp/openforge-bench-venv"))
PEER_PACKAGES = ["litellm[proxy]", "rllm-model-gateway", "sniffio"]
MODEL = "bench-policy"
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "Say ok."}], "max_tokens": 8}


# -- the mock engine: a raw ASGI app answering a fixed vLLM-format completion ---------------------
def _mock_payload() -> bytes:
    ids = list(range(100, 104))
    return json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": MODEL,
        "prompt_token_ids": list(range(1, 41)),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok ok ok ok", "tool_calls": []},
                     "finish_reason": "stop", "token_ids": ids,
                     "logprobs": {"content": [{"token": str(t), "logprob": -0.1, "bytes": [48 + t % 10],
                                                               "top_logprobs": []} for t in ids]}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 4, "total_tokens": 44},
    }).encode()


def mock_engine_app():
    payload = _mock_payload()
    models = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0,
                                                     "owned_by": "bench"}]}).encode()

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        more = True
        while more:
            msg = await receive()
            more = msg.get("more_body", False)
        body = models if scope["path"].endswith("/models") else payload
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    return app


# -- processes -----------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)


def spawn(name: str, cmd: list[str], workdir: Path, env: dict[str, str] | None = None) -> Proc:
    log = workdir / f"{name}.log"
    fh = log.open("w")
    popen = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=workdir, env={**os.environ, **(env or {})},
                             start_new_session=True)
    return Proc(name, popen, log)


async def wait_http(url: str, proc: Proc, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(timeout=2) as http:
        while time.monotonic() < deadline:
            if proc.popen.poll() is not None:
                raise RuntimeError(f"{proc.name} exited: {proc.log.read_text()[-2000:]}")
            try:
                if (await http.get(url)).status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.25)
    raise TimeoutError(f"{proc.name} not up at {url} after {timeout:.0f}s: {proc.log.read_text()[-2000:]}")


def ensure_peer_venv(venv: Path) -> Path:
    python = venv / "bin" / "python"
    ok = python.exists() and subprocess.run([str(python), "-c", "import litellm, rllm_model_gateway"],
                                            capture_output=True, check=False).returncode == 0
    if not ok:
        print(f"creating peer venv {venv} (litellm[proxy], rllm-model-gateway) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"), *PEER_PACKAGES],
                       check=True)
    return venv / "bin"


# -- load ----------------------------------------------------------------------------------------
@dataclass
class Result:
    name: str
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")
    rps: float = float("nan")
    errors: int = 0
    cpu_ms: float = float("nan")  # server CPU time per completed request (load-independent)
    records: str = ""
    notes: list[str] = field(default_factory=list)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[k]


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of a process and its children (psutil)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        total = 0.0
        for p in [proc, *proc.children(recursive=True)]:
            t = p.cpu_times()
            total += t.user + t.system
        return total
    except psutil.Error:
        return float("nan")


async def measure(name: str, make_call: Callable[[aiohttp.ClientSession, int], Awaitable[bool]], *, n_latency: int,
                  duration: float, concurrency: int, pid: int | None = None) -> Result:
    res = Result(name)
    connector = aiohttp.TCPConnector(limit=concurrency + 8)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as http:
        for i in range(20):  # warm-up
            await make_call(http, i)
        lat: list[float] = []
        for i in range(n_latency):
            t0 = time.perf_counter()
            ok = await make_call(http, i)
            lat.append((time.perf_counter() - t0) * 1000)
            res.errors += 0 if ok else 1
        res.p50_ms, res.p99_ms = statistics.median(lat), percentile(lat, 0.99)
        done = 0
        stop_at = time.perf_counter() + duration

        async def worker(w: int) -> None:
            nonlocal done
            while time.perf_counter() < stop_at:
                if await make_call(http, w):
                    done += 1
                else:
                    res.errors += 1

        t0 = time.perf_counter()
        cpu0 = cpu_seconds(pid) if pid else float("nan")
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        res.rps = done / (time.perf_counter() - t0)
        if pid and done:
            res.cpu_ms = (cpu_seconds(pid) - cpu0) * 1000 / done
    return res


def poster(url_for: Callable[[int], str], headers: dict[str, str] | None = None,
           timings: list[dict[str, float]] | None = None) -> Callable[[aiohttp.ClientSession, int], Awaitable[bool]]:
    """A call to the target; with ``timings``, also collects its ``Server-Timing`` header."""
    payload = json.dumps(BODY).encode()
    hdrs = {"content-type": "application/json", **(headers or {})}

    async def call(http: aiohttp.ClientSession, i: int) -> bool:
        try:
            async with http.post(url_for(i), data=payload, headers=hdrs) as r:
                await r.read()
                if timings is not None and "server-timing" in r.headers:
                    timings.append({part.split(";dur=")[0].strip(): float(part.split(";dur=")[1])
                                    for part in r.headers["server-timing"].split(",")})
                return r.status == 200
        except (TimeoutError, aiohttp.ClientError):
            return False

    return call


# -- targets -------------------------------------------------------------------------------------
async def bench_openforge(engine_url: str, workdir: Path, args: argparse.Namespace) -> Result:
    db = workdir / "openforge.db"
    port = free_port()
    proc = spawn("openforge", [sys.executable, "-m", "flows.cli", "proxy", "serve", "--engine", engine_url,
                               "--port", str(port), "--db", f"sqlite:///{db}", "--admin-key", "bench",
                               "--max-calls", "100000000"], workdir, env={"PYTHONPATH": str(ROOT)})
    try:
        await wait_http(f"http://127.0.0.1:{port}/healthz", proc)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers={"authorization": "Bearer bench"}) as h:
            regs = [(await h.post("/admin/rollouts", json={"task_id": f"bench-{i}"})).json()
                    for i in range(args.concurrency)]
        urls = [r["base_url"] + "/chat/completions" for r in regs]
        timings: list[dict[str, float]] = []
        res = await measure("openforge proxy", poster(lambda i: urls[i % len(urls)], timings=timings),
                            n_latency=args.n_latency, duration=args.duration, concurrency=args.concurrency,
                            pid=proc.popen.pid)
        seq = timings[20:20 + args.n_latency]  # the sequential phase
        if seq:
            own = statistics.median(t["proxy"] for t in seq)
            rec = statistics.median(t["record"] for t in seq)
            res.notes.append(f"inside the proxy (Server-Timing, sequential phase): p50 {own:.2f} ms of its own time, "
                             f"of which {rec:.2f} ms durable DB write")
        import sqlite3

        with sqlite3.connect(db) as conn:
            n = conn.execute("select count(*) from model_calls where prompt_token_ids is not null").fetchone()[0]
        res.records = f"{n} calls (SQLite, with token ids)"
        return res
    finally:
        proc.stop()


async def bench_litellm(engine_url: str, workdir: Path, args: argparse.Namespace, bin_dir: Path) -> Result:
    port = free_port()
    cfg = workdir / "litellm.yaml"
    cfg.write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL}\n"
        f"      api_base: {engine_url}\n"
        "      api_key: bench\n"
        "litellm_settings:\n  drop_params: true\n  telemetry: false\n"
    )
    key = "sk-openforge-bench-0123456789abcdef"
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR", "DISABLE_SCHEMA_UPDATE": "true",
           "LITELLM_MASTER_KEY": key}
    proc = spawn("litellm", [str(bin_dir / "litellm"), "--config", str(cfg), "--port", str(port),
                             "--host", "127.0.0.1", "--num_workers", "1"], workdir, env=env)
    try:
        await wait_http(f"http://127.0.0.1:{port}/health/liveliness", proc, timeout=180)
        res = await measure("LiteLLM proxy", poster(lambda i: f"http://127.0.0.1:{port}/v1/chat/completions",
                                                    {"authorization": f"Bearer {key}"}),
                            n_latency=args.n_latency, duration=args.duration, concurrency=args.concurrency,
                            pid=proc.popen.pid)
        res.records = "nothing (default config)"
        return res
    finally:
        proc.stop()


async def bench_rllm(engine_url: str, workdir: Path, args: argparse.Namespace, bin_dir: Path) -> Result:
    port = free_port()
    db = workdir / "rllm.db"
    proc = spawn("rllm-model-gateway", [str(bin_dir / "rllm-model-gateway"), "--host", "127.0.0.1", "--port", str(port),
                                        "--worker", engine_url, "--db-path", str(db), "--store", "sqlite",
                                        "--log-level", "warning"], workdir)
    try:
        await wait_http(f"http://127.0.0.1:{port}/health", proc)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as h:
            sids = [(await h.post("/sessions", json={})).json()["session_id"] for _ in range(args.concurrency)]
        urls = [f"http://127.0.0.1:{port}/sessions/{sid}/v1/chat/completions" for sid in sids]
        res = await measure("rllm-model-gateway", poster(lambda i: urls[i % len(urls)]), n_latency=args.n_latency,
                            duration=args.duration, concurrency=args.concurrency, pid=proc.popen.pid)
        res.records = "traces (SQLite)"
        return res
    finally:
        proc.stop()


# -- report --------------------------------------------------------------------------------------
def report(results: list[Result], direct: Result) -> str:
    lines = [f"{'target':<20} {'p50 ms':>8} {'p99 ms':>8} {'+p50 ms':>8} {'+p99 ms':>8} {'req/s':>8} {'cpu ms/req':>10} {'errors':>6}  records",
             "-" * 100]
    for r in [direct, *results]:
        add50 = r.p50_ms - direct.p50_ms if r is not direct else 0.0
        add99 = r.p99_ms - direct.p99_ms if r is not direct else 0.0
        lines.append(f"{r.name:<20} {r.p50_ms:8.2f} {r.p99_ms:8.2f} {add50:8.2f} {add99:8.2f} {r.rps:8.0f} "
                     f"{r.cpu_ms:10.2f} {r.errors:6d}  {r.records}")
    ours = next((r for r in results if r.name == "openforge proxy"), None)
    peers = [r for r in results if r is not ours and r.rps == r.rps]
    if ours and peers:
        best = max(peers, key=lambda r: r.rps)
        lines.append("")
        lines.append(f"throughput: openforge / best peer ({best.name}) = {ours.rps / best.rps:.2f}x (target >= 2x)")
        for p in peers:
            ours_add, peer_add = ours.p50_ms - direct.p50_ms, p.p50_ms - direct.p50_ms
            ratio = peer_add / ours_add if ours_add > 0 else float("inf")
            lines.append(f"added p50: openforge {ours_add:.2f} ms vs {p.name} {peer_add:.2f} ms "
                         f"({ratio:.1f}x less); throughput {ours.rps / p.rps:.2f}x")
        for p in peers:
            lines.append(f"server CPU per call: openforge {ours.cpu_ms:.2f} ms vs {p.name} {p.cpu_ms:.2f} ms "
                         f"({p.cpu_ms / ours.cpu_ms:.1f}x less)")
        lines.append(f"p50 overhead target < 1 ms: {'met' if ours.p50_ms - direct.p50_ms < 1 else 'NOT met'}")
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> int:
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:
        pass
    workdir = Path(tempfile.mkdtemp(prefix="openforge-bench-"))
    bin_dir = None if args.skip_peers else ensure_peer_venv(args.venv)
    engine_port = free_port()
    engine = spawn("mock-engine", [sys.executable, str(Path(__file__).resolve()), "--serve-mock", str(engine_port)], workdir)
    engine_url = f"http://127.0.0.1:{engine_port}/v1"
    results: list[Result] = []
    t_start = time.monotonic()
    try:
        await wait_http(f"{engine_url}/models", engine)
        direct = await measure("direct (engine)", poster(lambda i: f"{engine_url}/chat/completions"),
                               n_latency=args.n_latency, duration=args.duration, concurrency=args.concurrency,
                               pid=engine.popen.pid)
        direct.records = "-"
        print(f"direct done ({time.monotonic() - t_start:.0f}s)", flush=True)
        results.append(await bench_openforge(engine_url, workdir, args))
        print(f"openforge done ({time.monotonic() - t_start:.0f}s)", flush=True)
        if bin_dir is not None:
            for fn in (bench_rllm, bench_litellm):
                try:
                    results.append(await fn(engine_url, workdir, args, bin_dir))
                except Exception as exc:  # noqa: BLE001 - a peer that fails to start is reported, not fatal
                    results.append(Result(fn.__name__.removeprefix("bench_"), notes=[str(exc)[:300]]))
                print(f"{fn.__name__} done ({time.monotonic() - t_start:.0f}s)", flush=True)
    finally:
        engine.stop()
    print(f"\nconcurrency {args.concurrency}, {args.duration:.0f}s per throughput run, {args.n_latency} sequential "
          f"calls for latency, {os.cpu_count()} CPUs; logs in {workdir}\n")
    print(report(results, direct))
    for r in results:
        for note in r.notes:
            print(f"note ({r.name}): {note}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in [direct, *results]], indent=2))
    return 0


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=5.0, help="seconds per throughput run")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--n-latency", type=int, default=200, help="sequential calls for the latency percentiles")
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="venv holding the peers (created if missing)")
    p.add_argument("--skip-peers", action="store_true", help="only the direct engine and this proxy")
    p.add_argument("--json", help="also write the results to this JSON file")
    p.add_argument("--serve-mock", type=int, help=argparse.SUPPRESS)
    return p.parse_args()


def _terminate(*_: object) -> None:
    raise KeyboardInterrupt  # run the finally blocks that stop the servers


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    ns = parse_args()
    if ns.serve_mock:
        import uvicorn

        uvicorn.run(mock_engine_app(), host="127.0.0.1", port=ns.serve_mock, log_level="warning", access_log=False)
        sys.exit(0)
    sys.exit(asyncio.run(main(ns)))
