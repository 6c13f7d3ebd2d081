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
an httpx load generator was itself the bottleneck, at ~3 ms of CPU per call here). It shares
the machine's cores with the servers, so the report gives its CPU (cores) beside the proxy's
and says whether the box was full. Where ``wrk`` is installed (Debian: ``apt-get install
wrk``) every small-request target is measured a second time by wrk (C, far cheaper per call):
p50 of one connection and req/s at ``--concurrency``, with wrk's own CPU. Each target runs
``--repeat`` times (median [min-max]); ``--baseline-tree`` measures another checkout (a git
worktree of the previous commit) in the same run, and ``--procs N`` adds N proxy processes
on one SQLite DB (rollouts spread over them; the single-process figure stays the headline).

Trajectory workloads (bench/proxy_load.py) run in ``--traj-repeat`` rounds (default
``--repeat``): each round replays the workload directly against the engine and through each
proxy target (a fresh proxy process each), in an order rotated every round; a proxied run's
added wall time is against its own round's direct replay, and against the mock engine's own time on
the rollouts' calls (everything outside the engine: an upper bound of the proxy's share, free of
the direct replay's own client cost). The report gives medians and, per
target, median [min-max] over the rounds with n, and every round's added wall time.
bench/proxy_profile.py measures the proxy's own CPU per call on one workload, in process or
over HTTP, with cProfile.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
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
from typing import Any

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
DEFAULT_VENV = Path(os.environ.get("OPENFORGE_BENCH_VENV", "/tmp/openforge-bench-venv"))
PEER_PACKAGES = ["litellm[proxy]", "rllm-model-gateway", "sniffio"]
MODEL = "bench-policy"
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "Say ok."}], "max_tokens": 8}


STATS_PATH = "/_bench_stats"


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


def mock_engine_app(delay_s: float = 0.0):
    """The small request gets a fixed answer; trajectory calls (bench/proxy_load.py) an answer
    whose prompt ids tokenize their messages, after ``delay_s`` unless marked ``[nodelay]``."""
    import orjson
    from proxy_load import NO_DELAY_MARK, TRAJECTORY_MARK, engine_answer

    payload = _mock_payload()
    counter = [0]
    #: Trajectory calls served and the engine's own time on them (first receive -> last send):
    #: the floor a rollout's wall is judged against (GET .../_bench_stats).
    served = {"calls": 0, "busy_s": 0.0}
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
        if scope["path"].endswith(STATS_PATH):
            stats = json.dumps(served).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": stats})
            return
        t_in = time.perf_counter()
        more = True
        chunks = []
        while more:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        body = models if scope["path"].endswith("/models") else payload
        raw = b"".join(chunks)
        trajectory = TRAJECTORY_MARK in raw  # a trajectory call, not the small request
        if trajectory:
            counter[0] += 1
            body = engine_answer(orjson.loads(raw), counter[0])
            if delay_s and NO_DELAY_MARK not in raw:
                await asyncio.sleep(delay_s)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
        if trajectory:
            served["calls"] += 1
            served["busy_s"] += time.perf_counter() - t_in

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
    """One target on the small request: medians over ``--repeat`` runs, each run's figures kept."""

    name: str
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")
    rps: float = float("nan")
    errors: int = 0
    cpu_ms: float = float("nan")  # server CPU time per completed request (load-independent)
    records: str = ""
    notes: list[str] = field(default_factory=list)
    p50_runs: list[float] = field(default_factory=list)
    rps_runs: list[float] = field(default_factory=list)
    #: CPU of the load generator (this process) during the throughput runs, in cores.
    loadgen_cores: float = float("nan")
    #: The whole machine's busy cores during the throughput runs (ours and everyone else's).
    box_cores: float = float("nan")
    #: The same target driven by wrk (C): p50 at c=1, req/s at --concurrency, wrk's own CPU.
    wrk: dict[str, Any] = field(default_factory=dict)


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


def _busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (all cores, every process)."""
    import psutil

    t = psutil.cpu_times()
    return t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0)


def cpu_of(pids: list[int]) -> float:
    return sum(cpu_seconds(p) for p in pids)


@dataclass
class TimingSink:
    """``Server-Timing`` values of the answers received while ``on``."""

    on: bool = False
    values: list[dict[str, float]] = field(default_factory=list)


async def measure(name: str, make_call: Callable[[aiohttp.ClientSession, int], Awaitable[bool]], *, n_latency: int,
                  duration: float, concurrency: int, pid: int | list[int] | None = None, repeat: int = 1,
                  timings: TimingSink | None = None) -> Result:
    """``repeat`` runs of: ``n_latency`` sequential calls (p50/p99), then ``concurrency`` callers
    for ``duration`` s (req/s, server CPU per call, this load generator's CPU)."""
    res = Result(name)
    pids = [] if pid is None else [pid] if isinstance(pid, int) else pid
    p99s: list[float] = []
    cpus: list[float] = []
    gen_cores: list[float] = []
    box_cores: list[float] = []
    connector = aiohttp.TCPConnector(limit=concurrency + 8)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as http:
        for i in range(20):  # warm-up
            await make_call(http, i)
        for _ in range(repeat):
            lat: list[float] = []
            if timings is not None:
                timings.on = True
            for i in range(n_latency):
                t0 = time.perf_counter()
                ok = await make_call(http, i)
                lat.append((time.perf_counter() - t0) * 1000)
                res.errors += 0 if ok else 1
            if timings is not None:
                timings.on = False
            res.p50_runs.append(statistics.median(lat))
            p99s.append(percentile(lat, 0.99))
            done = 0
            stop_at = time.perf_counter() + duration

            async def worker(w: int, stop_at: float = stop_at) -> None:
                nonlocal done
                while time.perf_counter() < stop_at:
                    if await make_call(http, w):
                        done += 1
                    else:
                        res.errors += 1

            t0 = time.perf_counter()
            cpu0 = cpu_of(pids) if pids else float("nan")
            gen0 = time.process_time()
            box0 = _busy_seconds()
            await asyncio.gather(*(worker(w) for w in range(concurrency)))
            elapsed = time.perf_counter() - t0
            gen_cores.append((time.process_time() - gen0) / elapsed)
            box_cores.append((_busy_seconds() - box0) / elapsed)
            res.rps_runs.append(done / elapsed)
            if pids and done:
                cpus.append((cpu_of(pids) - cpu0) * 1000 / done)
    res.p50_ms, res.p99_ms = statistics.median(res.p50_runs), statistics.median(p99s)
    res.rps = statistics.median(res.rps_runs)
    res.cpu_ms = statistics.median(cpus) if cpus else float("nan")
    res.loadgen_cores = statistics.median(gen_cores)
    res.box_cores = statistics.median(box_cores)
    return res


def poster(url_for: Callable[[int], str], headers: dict[str, str] | None = None,
           timings: TimingSink | None = None) -> Callable[[aiohttp.ClientSession, int], Awaitable[bool]]:
    """A call to the target; with ``timings``, also collects its ``Server-Timing`` header."""
    payload = json.dumps(BODY).encode()
    hdrs = {"content-type": "application/json", **(headers or {})}

    async def call(http: aiohttp.ClientSession, i: int) -> bool:
        try:
            async with http.post(url_for(i), data=payload, headers=hdrs) as r:
                await r.read()
                if timings is not None and timings.on and "server-timing" in r.headers:
                    timings.values.append({part.split(";dur=")[0].strip(): float(part.split(";dur=")[1])
                                           for part in r.headers["server-timing"].split(",")})
                return r.status == 200
        except (TimeoutError, aiohttp.ClientError):
            return False

    return call


# -- a second load generator: wrk (C), where installed ---------------------------------------------
_WRK_SCRIPT = """
paths = {%s}
headers = {%s}
body = '%s'
i = 0
request = function()
  i = i + 1
  return wrk.format("POST", paths[(i %% #paths) + 1], headers, body)
end
"""


async def wrk_measure(res: Result, groups: list[tuple[str, list[str]]], headers: dict[str, str] | None,
                      workdir: Path, args: argparse.Namespace, pids: list[int]) -> None:
    """The target again under wrk: p50 of one connection (sequential calls), req/s with
    ``--concurrency`` connections; server CPU per call and wrk's own CPU (its children rusage).
    ``groups``: (base URL, paths) per server process; one wrk per process, connections split."""
    import resource
    import shutil

    if not args.wrk or shutil.which("wrk") is None:
        return
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    scripts = []
    for k, (_, paths) in enumerate(groups):
        script = workdir / f"wrk-{res.name.replace(' ', '-')}-{k}.lua"
        script.write_text(_WRK_SCRIPT % (", ".join(f'"{p}"' for p in paths),
                                         ", ".join(f'["{h}"] = "{v}"' for h, v in hdrs.items()), json.dumps(BODY)))
        scripts.append(script)

    async def wrk(k: int, conns: int) -> str:
        cmd = ["wrk", "-t1", f"-c{conns}", f"-d{max(1, round(args.duration))}s", "--latency", "-s", str(scripts[k]),
               groups[k][0]]
        done = await asyncio.to_thread(subprocess.run, cmd, capture_output=True, text=True, check=True)
        return done.stdout

    p50s: list[float] = []
    rpss: list[float] = []
    cpus: list[float] = []
    wrk_cores: list[float] = []
    for _ in range(args.repeat):
        p50s.append(_wrk_ms((await wrk(0, 1)).split(" 50%")[1].split()[0]))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu0 = cpu_of(pids)
        t0 = time.perf_counter()
        outs = await asyncio.gather(*(wrk(k, max(1, args.concurrency // len(groups))) for k in range(len(groups))))
        elapsed = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rps = sum(float(out.split("Requests/sec:")[1].split()[0]) for out in outs)
        rpss.append(rps)
        cpus.append((cpu_of(pids) - cpu0) * 1000 / (rps * elapsed) if rps else float("nan"))
        wrk_cores.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / elapsed)
        for out in outs:
            if "Non-2xx" in out or "Socket errors" in out:
                res.notes.append("wrk: " + " ".join(line.strip() for line in out.splitlines()
                                                   if "Non-2xx" in line or "Socket errors" in line))
    res.wrk = {"p50_runs": p50s, "rps_runs": rpss, "cpu_ms": statistics.median(cpus),
               "wrk_cores": statistics.median(wrk_cores)}


def _wrk_ms(text: str) -> float:
    for unit, scale in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise ValueError(f"wrk latency {text!r}")


# -- targets -------------------------------------------------------------------------------------
async def bench_openforge(engine_url: str, workdir: Path, args: argparse.Namespace, *, name: str = "openforge proxy",
                          root: Path = ROOT, procs: int = 1) -> Result:
    """``procs`` proxy processes from the checkout ``root`` on one SQLite DB; rollout ``i`` is
    served by process ``i % procs`` (a token binds a rollout to whichever process shares the DB)."""
    slug = name.replace(" ", "-").replace("(", "").replace(")", "")
    db_url = f"sqlite:///{workdir / (slug + '.db')}"
    servers = []
    try:
        for k in range(procs):
            servers.append(await openforge_proxy(engine_url, workdir, f"{slug}-{k}", db_url=db_url, root=root))
        first = servers[0][1]
        regs = await register_rollouts(first, args.concurrency, slug)
        owners = [servers[i % procs][1] for i in range(len(regs))]
        urls = [owner + base[len(first):] + "/chat/completions" for owner, (base, _) in zip(owners, regs)]
        timings = TimingSink()
        pids = [proc.popen.pid for proc, _, _ in servers]
        res = await measure(name, poster(lambda i: urls[i % len(urls)], timings=timings), n_latency=args.n_latency,
                            duration=args.duration, concurrency=args.concurrency, pid=pids, repeat=args.repeat,
                            timings=timings)
        if timings.values:
            own = statistics.median(t["proxy"] for t in timings.values)
            rec = statistics.median(t["record"] for t in timings.values)
            eng = statistics.median(t["engine"] for t in timings.values)
            res.notes.append(f"inside the proxy (Server-Timing, sequential calls): p50 {own:.2f} ms of its own time, "
                             f"of which {rec:.2f} ms durable DB write; the engine call {eng:.2f} ms")
        groups = [(url, [u[len(url):] for u, o in zip(urls, owners) if o == url]) for _, url, _ in servers]
        await wrk_measure(res, groups, None, workdir, args, pids)
        import sqlite3

        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            n = conn.execute("select count(*) from model_calls where prompt_token_ids is not null").fetchone()[0]
        res.records = f"{n} calls (SQLite, with token ids)"
        return res
    finally:
        for proc, _, _ in servers:
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
                            pid=proc.popen.pid, repeat=args.repeat)
        await wrk_measure(res, [(f"http://127.0.0.1:{port}", ["/v1/chat/completions"])],
                          {"Authorization": f"Bearer {key}"}, workdir, args, [proc.popen.pid])
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
                            duration=args.duration, concurrency=args.concurrency, pid=proc.popen.pid,
                            repeat=args.repeat)
        base = f"http://127.0.0.1:{port}"
        await wrk_measure(res, [(base, [u[len(base):] for u in urls])], None, workdir, args, [proc.popen.pid])
        res.records = "traces (SQLite)"
        return res
    finally:
        proc.stop()


# -- trajectory workloads (issue 18) -------------------------------------------------------------
@dataclass
class TrajResult:
    target: str
    workload: str
    calls: int = 0
    errors: int = 0
    wall_s: float = float("nan")  # mean rollout wall time
    added_frac: float = float("nan")  # (wall - direct wall) / direct wall
    #: (wall - the engine's own time on a rollout's calls) / that time: everything outside the
    #: engine (client, network, proxy), an upper bound of the proxy's share.
    engine_added_frac: float = float("nan")
    add_p50_ms: float = float("nan")  # per-call latency minus the direct engine's p50
    add_p99_ms: float = float("nan")
    cpu_ms: float = float("nan")  # server CPU per call
    end_cpu_ms: float = float("nan")  # server CPU per call at the workload's last (longest) prompt
    rss_mb: float = float("nan")  # server peak RSS
    rps: float = float("nan")  # calls/s, engine without delay
    stored_mb: float = float("nan")
    full_mb: float = float("nan")
    unique_mb: float = float("nan")
    tokens: float = float("nan")
    note: str = ""
    #: One value per round (``--traj-repeat``), the scalars above being their medians.
    wall_runs: list[float] = field(default_factory=list)
    added_runs: list[float] = field(default_factory=list)
    engine_added_runs: list[float] = field(default_factory=list)
    cpu_runs: list[float] = field(default_factory=list)
    end_cpu_runs: list[float] = field(default_factory=list)
    rps_runs: list[float] = field(default_factory=list)
    rss_runs: list[float] = field(default_factory=list)


def rss_mb(pid: int) -> float:
    import psutil

    try:
        proc = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20
    except psutil.Error:
        return float("nan")


async def engine_stats(engine_url: str) -> dict[str, float]:
    """The mock engine's trajectory calls served so far and its own time on them."""
    async with httpx.AsyncClient(timeout=30) as h:
        return (await h.get(engine_url.rstrip("/") + STATS_PATH)).json()


async def replay(w: Any, bases: list[tuple[str, dict[str, str]]], pid: int | None,
                 bodies: list[bytes] | None = None, path: str | None = None,
                 engine: str | None = None) -> dict[str, Any]:
    """Every rollout replays the workload's calls in order, all rollouts at once. With
    ``engine`` (the mock engine's URL) the result also holds the engine's own time on the
    replay's calls (``engine_calls``, ``engine_busy_s``): the floor of the rollouts' wall."""
    bodies = bodies or w.bodies
    path = path or w.path
    lat: list[float] = []
    walls: list[float] = []
    errors: list[str] = []
    peak = [0.0]
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set() and pid:
            peak[0] = max(peak[0], rss_mb(pid))
            await asyncio.sleep(0.25)

    async def rollout(http: aiohttp.ClientSession, base: str, headers: dict[str, str]) -> None:
        t_roll = time.perf_counter()
        hdrs = {"content-type": "application/json", **headers}
        for body in bodies:
            t0 = time.perf_counter()
            try:
                async with http.post(f"{base}/{path}", data=body, headers=hdrs) as r:
                    text = await r.read()
                    if r.status != 200:
                        errors.append(f"{r.status}: {text[:200]!r}")
                        return
            except (TimeoutError, aiohttp.ClientError) as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                return
            lat.append((time.perf_counter() - t0) * 1000)
        walls.append(time.perf_counter() - t_roll)

    sampler = asyncio.create_task(sample())
    connector = aiohttp.TCPConnector(limit=len(bases) + 8)
    served0 = await engine_stats(engine) if engine else None
    cpu0 = cpu_seconds(pid) if pid else float("nan")
    t0 = time.perf_counter()
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as http:
        await asyncio.gather(*(rollout(http, b, h) for b, h in bases))
    elapsed = time.perf_counter() - t0
    cpu = (cpu_seconds(pid) - cpu0) if pid else float("nan")
    done.set()
    await sampler
    out = {"lat": lat, "walls": walls, "errors": errors, "elapsed": elapsed, "cpu_s": cpu, "rss_mb": peak[0]}
    if served0 is not None:
        served1 = await engine_stats(engine)
        out["engine_calls"] = served1["calls"] - served0["calls"]
        out["engine_busy_s"] = served1["busy_s"] - served0["busy_s"]
    return out


def chat_bodies(w: Any) -> list[bytes]:
    """The chat bodies the proxy sends the engine for ``w`` (for the direct baseline)."""
    import orjson

    from training.proxy.translate_chat import chat_for_engine
    from training.proxy.translate_messages import messages_to_chat
    from training.proxy.translate_responses import responses_to_chat

    out = []
    for raw in w.bodies:
        body = orjson.loads(raw)
        chat = (chat_for_engine(body) if w.api == "chat" else responses_to_chat(body)[0] if w.api == "responses"
                else messages_to_chat(body))
        chat.pop("stream", None)
        chat.pop("stream_options", None)
        out.append(orjson.dumps({**chat, "return_token_ids": True, "logprobs": True}))
    return out


def summarize(target: str, w: Any, slow: dict[str, Any], fast: dict[str, Any] | None,
              direct: TrajResult | None, direct_lat: list[float] | None) -> TrajResult:
    r = TrajResult(target, w.name, calls=len(slow["lat"]), errors=len(slow["errors"]))
    if slow["walls"]:
        r.wall_s = statistics.mean(slow["walls"])
    if direct is not None and direct.wall_s == direct.wall_s:
        r.added_frac = r.wall_s / direct.wall_s - 1
    # Against the engine's own time: every rollout finished and every call reached the engine,
    # so the engine's time per rollout (its calls run one after another) is the rollout's floor.
    if (slow.get("engine_calls") == len(slow["lat"]) and not slow["errors"] and slow["walls"]
            and slow.get("engine_busy_s", 0) > 0):
        r.engine_added_frac = r.wall_s / (slow["engine_busy_s"] / len(slow["walls"])) - 1
    if direct_lat and slow["lat"]:
        r.add_p50_ms = statistics.median(slow["lat"]) - statistics.median(direct_lat)
        r.add_p99_ms = percentile(slow["lat"], 0.99) - percentile(direct_lat, 0.99)
    if r.calls:
        r.cpu_ms = slow["cpu_s"] * 1000 / r.calls
    r.rss_mb = slow["rss_mb"]
    if fast is not None and fast["lat"]:
        r.rps = len(fast["lat"]) / fast["elapsed"]
        r.errors += len(fast["errors"])
    errs = slow["errors"] + (fast["errors"] if fast else [])
    if errs:
        r.note = f"{len(errs)} errors, first: {errs[0][:160]}"
    return r


async def openforge_proxy(engine_url: str, workdir: Path, name: str, *, full: bool = False,
                          db_url: str | None = None, root: Path = ROOT) -> tuple[Proc, str, str]:
    db_url = db_url or f"sqlite:///{workdir / (name + '.db')}"
    port = free_port()
    cmd = [sys.executable, "-m", "cli", "proxy", "serve", "--engine", engine_url, "--port", str(port),
           "--db", db_url, "--admin-key", "bench", "--max-calls", "100000000"]
    proc = spawn(name, cmd + (["--full-storage"] if full else []), workdir, env={"PYTHONPATH": str(root)})
    await wait_http(f"http://127.0.0.1:{port}/healthz", proc)
    return proc, f"http://127.0.0.1:{port}", db_url


async def register_rollouts(url: str, n: int, prefix: str) -> list[tuple[str, dict[str, str]]]:
    async with httpx.AsyncClient(base_url=url, headers={"authorization": "Bearer bench"}, timeout=60) as h:
        regs = [(await h.post("/admin/rollouts", json={"task_id": f"{prefix}-{i}"})).json() for i in range(n)]
    return [(r["base_url"], {}) for r in regs]


def _median_of(runs: list[TrajResult]) -> TrajResult:
    """One target's rounds as one result: medians, with every round's value kept (``*_runs``)."""
    first = runs[0]

    def med(values: list[float]) -> float:
        ok = [v for v in values if not math.isnan(v)]
        return statistics.median(ok) if ok else float("nan")

    out = TrajResult(first.target, first.workload, calls=sum(r.calls for r in runs), errors=sum(r.errors for r in runs),
                     stored_mb=first.stored_mb, full_mb=first.full_mb, unique_mb=first.unique_mb, tokens=first.tokens,
                     note="; ".join(dict.fromkeys(r.note for r in runs if r.note)))
    out.wall_runs = [r.wall_s for r in runs]
    out.added_runs = [r.added_frac for r in runs]
    out.engine_added_runs = [r.engine_added_frac for r in runs]
    out.cpu_runs = [r.cpu_ms for r in runs]
    out.end_cpu_runs = [r.end_cpu_ms for r in runs]
    out.rps_runs = [r.rps for r in runs]
    out.rss_runs = [r.rss_mb for r in runs]
    out.wall_s, out.added_frac, out.cpu_ms = med(out.wall_runs), med(out.added_runs), med(out.cpu_runs)
    out.engine_added_frac = med(out.engine_added_runs)
    out.end_cpu_ms, out.rps, out.rss_mb = med(out.end_cpu_runs), med(out.rps_runs), max(out.rss_runs)
    out.add_p50_ms = med([r.add_p50_ms for r in runs])
    out.add_p99_ms = med([r.add_p99_ms for r in runs])
    return out


async def bench_trajectories(engine_url: str, workdir: Path, args: argparse.Namespace,
                             bin_dir: Path | None) -> list[TrajResult]:
    """Each workload in ``--traj-repeat`` rounds; a round replays it directly against the engine
    and through each proxy target (a fresh proxy process each), in an order rotated every round,
    and each proxied run's added wall time is against the direct replay of its own round, so
    drifts of a shared box land on both sides of most rounds."""
    from proxy_load import sqlite_storage, without_delay, workloads

    out: list[TrajResult] = []
    n = args.rollouts
    rounds = max(1, args.traj_repeat)
    for w in workloads(args.traj_calls, args.final_tokens):
        if w.name not in args.workloads.split(","):
            continue
        fast_w = without_delay(w)
        direct_bodies = chat_bodies(w)
        direct_fast = chat_bodies(fast_w)
        targets = [("direct (engine)", None), ("openforge", False), ("openforge full-storage", True)]
        per_target: dict[str, list[TrajResult]] = {name: [] for name, _ in targets}
        for rnd in range(rounds):
            k = rnd % len(targets)
            order = targets[k:] + targets[:k]
            slow_runs: dict[str, dict[str, Any]] = {}
            fast_runs: dict[str, dict[str, Any] | None] = {}
            ends: dict[str, dict[str, Any]] = {}
            for name, full in order:
                if full is None:
                    slow_runs[name] = await replay(w, [(engine_url, {})] * n, None, direct_bodies, "chat/completions",
                                                    engine=engine_url)
                    fast_runs[name] = await replay(w, [(engine_url, {})] * n, None, direct_fast, "chat/completions")
                    continue
                proc, url, db_url = await openforge_proxy(engine_url, workdir,
                                                          f"{name.replace(' ', '-')}-{w.name}-{rnd}", full=full)
                try:
                    slow_runs[name] = await replay(w, await register_rollouts(url, n, w.name), proc.popen.pid,
                                                   engine=engine_url)
                    fast_bases = await register_rollouts(url, n, w.name + "-fast")
                    fast_runs[name] = await replay(fast_w, fast_bases, proc.popen.pid)
                    # The longest prompt again, 3 times a rollout on top of its history (no delay):
                    # the proxy's CPU per call at the workload's end (~--final-tokens of prompt).
                    ends[name] = await replay(fast_w, fast_bases, proc.popen.pid, [fast_w.bodies[-1]] * 3)
                finally:
                    proc.stop()
                if rnd == 0:  # what is stored is the same every round
                    slow_runs[name]["storage"] = sqlite_storage(db_url.removeprefix("sqlite:///"), max_calls=len(w.bodies))
            direct_name = targets[0][0]
            d_slow = slow_runs[direct_name]
            direct = summarize(direct_name, w, d_slow, fast_runs[direct_name], None, None)
            per_target[direct_name].append(direct)
            for name, _ in targets[1:]:
                r = summarize(name, w, slow_runs[name], fast_runs[name], direct, d_slow["lat"])
                end = ends.get(name)
                if end and end["lat"] and not end["errors"]:
                    r.end_cpu_ms = end["cpu_s"] * 1000 / len(end["lat"])
                st = slow_runs[name].get("storage")
                if st:
                    r.stored_mb, r.full_mb, r.unique_mb, r.tokens = (st["stored_mb"], st["full_mb"], st["unique_mb"],
                                                                     st["tokens"])
                per_target[name].append(r)
            print(f"  {w.name}: round {rnd + 1}/{rounds} done (" + ", ".join(
                f"{name} {100 * per_target[name][-1].added_frac:+.2f} % vs direct, "
                f"{100 * per_target[name][-1].engine_added_frac:+.2f} % vs the engine's own time"
                for name, _ in targets[1:]) + ")", flush=True)
        combined = {name: _median_of(runs) for name, runs in per_target.items()}
        out.extend(combined.values())
        direct = combined[targets[0][0]]
        if bin_dir is not None:
            for peer in (traj_rllm, traj_litellm):  # one run each, against the rounds' median direct wall
                try:
                    res = await peer(engine_url, workdir, w, fast_w, n, bin_dir, direct, d_slow["lat"])
                    res.added_runs, res.wall_runs = [res.added_frac], [res.wall_s]
                    out.append(res)
                except Exception as exc:  # noqa: BLE001 - a peer that cannot run a workload is reported
                    out.append(TrajResult(peer.__name__.removeprefix("traj_"), w.name, note=str(exc)[:200]))
                print(f"  {w.name}: {peer.__name__} done", flush=True)
    return out


async def traj_rllm(engine_url: str, workdir: Path, w: Any, fast_w: Any, n: int, bin_dir: Path,
                    direct: TrajResult, direct_lat: list[float]) -> TrajResult:
    if w.api != "chat":
        return TrajResult("rllm-model-gateway", w.name, note=f"speaks OpenAI chat only, not {w.api}")
    port = free_port()
    proc = spawn(f"rllm-{w.name}", [str(bin_dir / "rllm-model-gateway"), "--host", "127.0.0.1", "--port", str(port),
                                    "--worker", engine_url, "--db-path", str(workdir / f"rllm-{w.name}.db"),
                                    "--store", "sqlite", "--log-level", "warning"], workdir)
    try:
        await wait_http(f"http://127.0.0.1:{port}/health", proc)

        async def sessions() -> list[tuple[str, dict[str, str]]]:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as h:
                sids = [(await h.post("/sessions", json={})).json()["session_id"] for _ in range(n)]
            return [(f"http://127.0.0.1:{port}/sessions/{sid}/v1", {}) for sid in sids]

        slow = await replay(w, await sessions(), proc.popen.pid, engine=engine_url)
        fast = await replay(fast_w, await sessions(), proc.popen.pid)
        r = summarize("rllm-model-gateway", w, slow, fast, direct, direct_lat)
        db = workdir / f"rllm-{w.name}.db"
        r.stored_mb = db.stat().st_size / max(1, 2 * n) / 1e6 if db.exists() else float("nan")
        r.note = (r.note + "; " if r.note else "") + "MB stored: SQLite file size / rollouts"
        return r
    finally:
        proc.stop()


async def traj_litellm(engine_url: str, workdir: Path, w: Any, fast_w: Any, n: int, bin_dir: Path,
                       direct: TrajResult, direct_lat: list[float]) -> TrajResult:
    port = free_port()
    cfg = workdir / f"litellm-{w.name}.yaml"
    cfg.write_text("model_list:\n" + "".join(
        f"  - model_name: {m}\n    litellm_params:\n      model: openai/{m}\n      api_base: {engine_url}\n"
        "      api_key: bench\n" for m in (MODEL,))
        + "litellm_settings:\n  drop_params: true\n  telemetry: false\n")
    key = "sk-openforge-bench-0123456789abcdef"
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR", "DISABLE_SCHEMA_UPDATE": "true",
           "LITELLM_MASTER_KEY": key}
    proc = spawn(f"litellm-{w.name}", [str(bin_dir / "litellm"), "--config", str(cfg), "--port", str(port),
                                       "--host", "127.0.0.1", "--num_workers", "1"], workdir, env=env)
    try:
        await wait_http(f"http://127.0.0.1:{port}/health/liveliness", proc, timeout=180)
        bases = [(f"http://127.0.0.1:{port}/v1", {"authorization": f"Bearer {key}", "x-api-key": key})] * n
        slow = await replay(w, bases, proc.popen.pid, engine=engine_url)
        fast = await replay(fast_w, bases, proc.popen.pid) if not slow["errors"] else None
        r = summarize("LiteLLM proxy", w, slow, fast, direct, direct_lat)
        r.note = (r.note + "; " if r.note else "") + "records nothing (default config)"
        return r
    finally:
        proc.stop()


async def bench_streams(engine_url: str, workdir: Path, args: argparse.Namespace) -> list[str]:
    """``--streams`` concurrent streamed Messages calls held through the proxy while the engine
    takes ``--engine-delay``; then the same load with the proxy SIGKILLed mid-way: every call a
    client saw answered in full must be in the DB."""
    import sqlite3

    import orjson

    n = args.streams
    body = orjson.dumps({"model": MODEL, "max_tokens": 256, "stream": True, "system": "You are a coding agent.",
                         "messages": [{"role": "user", "content": "TASK: say ok"}]})
    lines = []
    proc, url, db_url = await openforge_proxy(engine_url, workdir, "openforge-streams")
    try:
        bases = await register_rollouts(url, n, "stream")
        ok = errs = 0
        first_err = ""
        peak = [0.0]

        async def one(http: aiohttp.ClientSession, base: str) -> None:
            nonlocal ok, errs, first_err
            try:
                async with http.post(f"{base}/messages", data=body, headers={"content-type": "application/json"}) as r:
                    text = await r.read()
                    if r.status == 200 and b"message_stop" in text:
                        ok += 1
                        return
                    first_err = first_err or f"{r.status} {text[:120]!r}"
            except (TimeoutError, aiohttp.ClientError) as exc:
                first_err = first_err or f"{type(exc).__name__}: {exc}"
            errs += 1

        async def sample() -> None:
            while True:
                peak[0] = max(peak[0], rss_mb(proc.popen.pid))
                await asyncio.sleep(0.25)

        sampler = asyncio.create_task(sample())
        t0 = time.perf_counter()
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=n + 8),
                                         timeout=aiohttp.ClientTimeout(total=300)) as http:
            await asyncio.gather(*(one(http, b) for b, _ in bases))
        sampler.cancel()
        lines.append(f"{n} concurrent streamed Messages calls (engine {args.engine_delay:.2f} s): {ok} ok, {errs} errors "
                     f"in {time.perf_counter() - t0:.1f} s, proxy peak RSS {peak[0]:.0f} MB"
                     + (f"; first error: {first_err}" if first_err else ""))
    finally:
        proc.stop()

    # SIGKILL under that load.
    proc, url, db_url = await openforge_proxy(engine_url, workdir, "openforge-sigkill")
    bases = await register_rollouts(url, n, "kill")
    acked: dict[str, int] = {}
    stop = asyncio.Event()

    async def loop(http: aiohttp.ClientSession, base: str) -> None:
        rid_token = base.rsplit("/rollouts/", 1)[1].split("/")[0]
        while not stop.is_set():
            try:
                async with http.post(f"{base}/messages", data=body, headers={"content-type": "application/json"}) as r:
                    text = await r.read()
                    if r.status == 200 and b"message_stop" in text:
                        acked[rid_token] = acked.get(rid_token, 0) + 1
                        continue
            except (TimeoutError, aiohttp.ClientError):
                pass
            return

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=n + 8),
                                     timeout=aiohttp.ClientTimeout(total=60)) as http:
        tasks = [asyncio.create_task(loop(http, b)) for b, _ in bases]
        await asyncio.sleep(max(8.0, 8 * args.engine_delay))
        os.killpg(proc.popen.pid, signal.SIGKILL)
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    proc.popen.wait(10)
    from training.proxy.recorder import token_sha256

    conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    rows = dict(conn.execute("select r.token_sha256, count(c.id) from rollouts r left join model_calls c "
                             "on c.rollout_id = r.id group by r.id").fetchall())
    conn.close()
    lost = sum(max(0, k - rows.get(token_sha256(tok), 0)) for tok, k in acked.items())
    lines.append(f"SIGKILL under {n} concurrent streamed rollouts: {sum(acked.values())} calls acknowledged before the "
                 f"kill, {sum(rows.values())} in the DB, {lost} acknowledged calls lost")
    return lines


async def bench_processes(engine_url: str, workdir: Path, args: argparse.Namespace) -> list[str]:
    """1 and 4 proxy processes on one PostgreSQL (``--pg-url``): rollouts registered on the
    first, each then served by process ``i % N`` (a token binds a rollout to any proxy that
    shares the DB). The small request at ``--concurrency``."""
    from sqlalchemy import text

    from storage.db import make_engine
    from storage.migrate import upgrade
    from storage.models import Base

    db = make_engine(args.pg_url)
    with db.begin() as conn:  # a fresh schema: the bench's own database
        Base.metadata.drop_all(conn)
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    upgrade(args.pg_url, db)
    db.dispose()
    lines = []
    for n_procs in (1, 4):
        procs = []
        try:
            for k in range(n_procs):
                procs.append(await openforge_proxy(engine_url, workdir, f"openforge-pg{n_procs}-{k}", db_url=args.pg_url))
            first = procs[0][1]
            regs = await register_rollouts(first, args.concurrency, f"pg{n_procs}")
            urls = []
            for i, (base, _) in enumerate(regs):
                own = procs[i % n_procs][1]
                urls.append(own + base[len(first):] + "/chat/completions")
            res = await measure(f"openforge x{n_procs} (PostgreSQL)", poster(lambda i, urls=urls: urls[i % len(urls)]),
                                n_latency=args.n_latency, duration=args.duration, concurrency=args.concurrency)
            lines.append(f"{n_procs} proxy process(es) on one PostgreSQL, c={args.concurrency}: p50 {res.p50_ms:.2f} ms, "
                         f"p99 {res.p99_ms:.2f} ms, {res.rps:.0f} req/s, {res.errors} errors")
        finally:
            for proc, _, _ in procs:
                proc.stop()
    return lines


def traj_report(results: list[TrajResult], args: argparse.Namespace) -> str:
    rounds = max(1, args.traj_repeat)
    lines = [(f"trajectory workloads: {args.rollouts} concurrent rollouts, engine delay {args.engine_delay:.2f} s a "
              f"call; {rounds} rounds (direct and proxied replays interleaved, order rotated each round), medians "
              f"(+wall %: each round's proxied wall against that round's direct one; +eng %: the rollouts' wall "
              f"against the engine's own time on their calls (client + network + proxy: an upper bound of the "
              f"proxy's share); req/s: the same replay with no "
              f"delay; cpu @end: the proxy's CPU per call on the last, longest prompt, sent 3 more times per rollout "
              f"with no delay)"),
             (f"{'workload':<8} {'target':<24} {'calls':>6} {'err':>4} {'+wall %':>8} {'+eng %':>7} {'+p50 ms':>8} "
              f"{'+p99 ms':>8} "
              f"{'cpu ms/call':>11} {'@end':>6} {'RSS MB':>7} {'req/s':>7} {'MB/rollout':>10} {'full MB':>8} {'uniq MB':>8} "
              f"{'stored/uniq':>11}"), "-" * 165]
    for r in results:
        ratio = r.stored_mb / r.unique_mb if r.unique_mb == r.unique_mb and r.unique_mb else float("nan")
        lines.append(f"{r.workload:<8} {r.target:<24} {r.calls:6d} {r.errors:4d} {100 * r.added_frac:8.2f} "
                     f"{100 * r.engine_added_frac:7.2f} {r.add_p50_ms:8.2f} {r.add_p99_ms:8.2f} {r.cpu_ms:11.2f} {r.end_cpu_ms:6.2f} {r.rss_mb:7.0f} {r.rps:7.0f} "
                     f"{r.stored_mb:10.3f} {r.full_mb:8.3f} {r.unique_mb:8.3f} {ratio:11.2f}"
                     + (f"  {r.note}" if r.note else ""))
    lines.append("")
    lines.append("per round (median [min-max], n rounds):")
    for r in results:
        n = len([v for v in r.wall_runs if not math.isnan(v)])
        if r.target == "direct (engine)":
            lines.append(f"{r.workload:<8} {r.target:<24} rollout wall s {_spread(r.wall_runs)} (n={n}); "
                         f"+eng % {_spread([100 * v for v in r.engine_added_runs])}; "
                         f"req/s {_spread(r.rps_runs, '{:.0f}')}")
            continue
        lines.append(f"{r.workload:<8} {r.target:<24} +wall % {_spread([100 * v for v in r.added_runs])} (n={n}); "
                     f"+eng % {_spread([100 * v for v in r.engine_added_runs])}; "
                     f"cpu ms/call {_spread(r.cpu_runs)}; @end {_spread(r.end_cpu_runs)}; "
                     f"req/s {_spread(r.rps_runs, '{:.0f}')}; runs +wall %: "
                     + ", ".join(f"{100 * v:.2f}" for v in r.added_runs))
    lines.append("")
    for w in sorted({r.workload for r in results}):
        ours = next((r for r in results if r.workload == w and r.target == "openforge"), None)
        full = next((r for r in results if r.workload == w and r.target == "openforge full-storage"), None)
        if ours:
            adds = [v for v in ours.added_runs if not math.isnan(v)]
            if adds:
                # A proxy cannot make a rollout faster than the engine alone: a round below -2 %
                # says the replays' own wall moved between runs by more than the target, so
                # rounds under +2 % then show nothing. Shown: every round within (-2 %, +2 %).
                med, lo, hi = statistics.median(adds), min(adds), max(adds)
                verdict = ("shown: every round within +-2 %" if lo > -0.02 and hi < 0.02 else
                           "NOT met" if med >= 0.02 else
                           "NOT shown: the rounds spread wider than the target (noise of the shared box)")
                lines.append(f"{w}: target < 2 % added wall time: median {100 * med:.2f} % [{100 * lo:.2f} to "
                             f"{100 * hi:.2f}], n={len(adds)} -> {verdict}")
            eng = [v for v in ours.engine_added_runs if not math.isnan(v)]
            if eng:
                # The rollouts' wall against the engine's own time on their calls: all that is not
                # the engine (the load generator's client, loopback, the proxy), so an upper bound
                # of what the proxy adds, free of the direct replay's own (different) client cost.
                med, lo, hi = statistics.median(eng), min(eng), max(eng)
                verdict = ("shown: under 2 % in every round (an upper bound: client and network included)"
                           if hi < 0.02 else "NOT shown in every round" if med < 0.02 else "NOT met (upper bound)")
                lines.append(f"{w}: target < 2 % added wall time, against the engine's own time: median "
                             f"{100 * med:.2f} % [{100 * lo:.2f} to {100 * hi:.2f}], n={len(eng)} -> {verdict}")
            ends = [v for v in ours.end_cpu_runs if not math.isnan(v)]
            if ends:
                med, hi = statistics.median(ends), max(ends)
                verdict = ("met in every round" if hi < 5 else "NOT met in every round" if med < 5 else "NOT met")
                lines.append(f"{w}: target < 5 ms proxy CPU per call at the end: median {med:.2f} ms "
                             f"[{min(ends):.2f}-{hi:.2f}], n={len(ends)} -> {verdict}")
        if ours and full and ours.stored_mb == ours.stored_mb:
            lines.append(f"{w}: bytes per rollout {full.stored_mb:.2f} MB in full -> {ours.stored_mb:.2f} MB linear "
                         f"({full.stored_mb / ours.stored_mb:.1f}x less; {ours.tokens:.0f} unique tokens)")
        for p in (r for r in results if r.workload == w and r.target not in ("openforge", "openforge full-storage",
                                                                             "direct (engine)") and r.rps == r.rps):
            if ours:
                lines.append(f"{w}: openforge vs {p.target} (peer: one run): req/s {ours.rps / p.rps:.2f}x, cpu/call "
                             f"{p.cpu_ms / ours.cpu_ms:.1f}x less")
    return "\n".join(lines)


# -- report --------------------------------------------------------------------------------------
def _spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """``median [min-max]`` of the runs (``[min, max]`` when a value is negative)."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "-"
    sep = ", " if min(values) < 0 else "-"
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}{sep}{fmt.format(max(values))}]"


def report(results: list[Result], direct: Result, repeat: int, concurrency: int) -> str:
    header = (f"{'target':<28} {'p50 ms':>8} {'+p50 ms (runs)':>24} {'+p99 ms':>8} {'req/s (runs)':>20} "
              f"{'cpu ms/req':>10} {'gen cores':>9} {'errors':>6}  records")
    title = (f"load generator: this process (aiohttp + uvloop), c={concurrency}; {repeat} runs per target, "
             "median [min-max] of the runs")
    lines = [title, header, "-" * 150]
    for r in [direct, *results]:
        adds = [p - direct.p50_ms for p in r.p50_runs] if r is not direct else [0.0]
        add99 = r.p99_ms - direct.p99_ms if r is not direct else 0.0
        lines.append(f"{r.name:<28} {r.p50_ms:8.2f} {_spread(adds):>24} {add99:8.2f} {_spread(r.rps_runs, '{:.0f}'):>20} "
                     f"{r.cpu_ms:10.2f} {r.loadgen_cores:9.2f} {r.errors:6d}  {r.records}")
    with_wrk = [r for r in [direct, *results] if r.wrk]
    if with_wrk:
        dw = statistics.median(direct.wrk["p50_runs"]) if direct.wrk else float("nan")
        header = (f"{'target':<28} {'p50 ms':>8} {'+p50 ms (runs)':>24} {'req/s (runs)':>20} "
                  f"{'cpu ms/req':>10} {'wrk cores':>9}")
        lines += ["", f"load generator: wrk (C, one thread); p50 of one connection, req/s with c={concurrency}",
                  header, "-" * 110]
        for r in with_wrk:
            w = r.wrk
            adds = [p - dw for p in w["p50_runs"]] if r is not direct else [0.0]
            lines.append(f"{r.name:<28} {statistics.median(w['p50_runs']):8.2f} {_spread(adds):>24} "
                         f"{_spread(w['rps_runs'], '{:.0f}'):>20} {w['cpu_ms']:10.2f} {w['wrk_cores']:9.2f}")
    ours = next((r for r in results if r.name == "openforge proxy"), None)
    if ours is None:
        return "\n".join(lines)
    lines.append("")
    cores = os.cpu_count() or 1
    proxy_cores = ours.rps * ours.cpu_ms / 1000
    engine_cores = ours.rps * direct.cpu_ms / 1000
    ours_cores = proxy_cores + ours.loadgen_cores + engine_cores
    lines.append(f"CPU during openforge's throughput runs (aiohttp load), of {cores} cores: proxy {proxy_cores:.2f}, "
                 f"load generator {ours.loadgen_cores:.2f}, mock engine ~{engine_cores:.2f}; the whole box "
                 f"{ours.box_cores:.2f} busy, so {max(0.0, ours.box_cores - ours_cores):.2f} went to other processes. "
                 + ("The box was full: the figure is bounded by CPU, not by the proxy alone"
                    if ours.box_cores > 0.85 * cores else "CPU was left idle: the figure is the proxy's own limit"))
    add = ours.p50_ms - direct.p50_ms
    lines.append(f"target +p50 < 1 ms (single process, aiohttp load): {add:.2f} ms -> {'met' if add < 1 else 'NOT met'}")
    lines.append(f"target >= 1000 req/s at c={concurrency} (single process, aiohttp load): "
                 f"{ours.rps:.0f} -> {'met' if ours.rps >= 1000 else 'NOT met'}")
    if ours.wrk and direct.wrk:
        wadd = statistics.median(ours.wrk["p50_runs"]) - statistics.median(direct.wrk["p50_runs"])
        wrps = statistics.median(ours.wrk["rps_runs"])
        lines.append(f"the same under wrk: +p50 {wadd:.2f} ms -> {'met' if wadd < 1 else 'NOT met'}; {wrps:.0f} req/s -> "
                     f"{'met' if wrps >= 1000 else 'NOT met'}")
    peers = [r for r in results if r.name in ("rllm-model-gateway", "LiteLLM proxy") and r.rps == r.rps]
    if peers:
        best = max(peers, key=lambda r: r.rps)
        lines.append(f"throughput: openforge / best peer ({best.name}) = {ours.rps / best.rps:.2f}x (target >= 2x)")
        for p in peers:
            ours_add, peer_add = ours.p50_ms - direct.p50_ms, p.p50_ms - direct.p50_ms
            ratio = peer_add / ours_add if ours_add > 0 else float("inf")
            lines.append(f"added p50: openforge {ours_add:.2f} ms vs {p.name} {peer_add:.2f} ms ({ratio:.1f}x less); "
                         f"throughput {ours.rps / p.rps:.2f}x; server CPU per call {ours.cpu_ms:.2f} vs {p.cpu_ms:.2f} ms")
    return "\n".join(lines)


def drop_records(workdir: Path) -> None:
    """Remove the recorded databases and side files (GBs after the trajectory workloads; their
    sizes are already measured) and keep the logs."""
    import shutil

    for path in workdir.iterdir():
        if path.name.endswith((".db", ".db-wal", ".db-shm", ".db-calls")):
            shutil.rmtree(path) if path.is_dir() else path.unlink()


async def main(args: argparse.Namespace) -> int:
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:
        pass
    workdir = Path(tempfile.mkdtemp(prefix="openforge-bench-"))
    bin_dir = None if args.skip_peers else ensure_peer_venv(args.venv)
    engine_port = free_port()
    engine = spawn("mock-engine", [sys.executable, str(Path(__file__).resolve()), "--serve-mock", str(engine_port),
                                   "--engine-delay", str(args.engine_delay)], workdir)
    engine_url = f"http://127.0.0.1:{engine_port}/v1"
    results: list[Result] = []
    t_start = time.monotonic()
    try:
        await wait_http(f"{engine_url}/models", engine)
        direct = await measure("direct (engine)", poster(lambda i: f"{engine_url}/chat/completions"),
                               n_latency=args.n_latency, duration=args.duration, concurrency=args.concurrency,
                               pid=engine.popen.pid, repeat=args.repeat)
        await wrk_measure(direct, [(f"http://127.0.0.1:{engine_port}", ["/v1/chat/completions"])], None, workdir, args,
                          [engine.popen.pid])
        direct.records = "-"
        print(f"direct done ({time.monotonic() - t_start:.0f}s)", flush=True)
        results.append(await bench_openforge(engine_url, workdir, args))
        print(f"openforge done ({time.monotonic() - t_start:.0f}s)", flush=True)
        if args.baseline_tree:
            results.append(await bench_openforge(engine_url, workdir, args, name="openforge (baseline tree)",
                                                 root=args.baseline_tree.resolve()))
            print(f"baseline tree done ({time.monotonic() - t_start:.0f}s)", flush=True)
        if args.procs > 1:
            results.append(await bench_openforge(engine_url, workdir, args, name=f"openforge x{args.procs} processes",
                                                 procs=args.procs))
            print(f"{args.procs} processes done ({time.monotonic() - t_start:.0f}s)", flush=True)
        if bin_dir is not None:
            for fn in (bench_rllm, bench_litellm):
                try:
                    results.append(await fn(engine_url, workdir, args, bin_dir))
                except Exception as exc:  # noqa: BLE001 - a peer that fails to start is reported, not fatal
                    results.append(Result(fn.__name__.removeprefix("bench_"), notes=[str(exc)[:300]]))
                print(f"{fn.__name__} done ({time.monotonic() - t_start:.0f}s)", flush=True)
        traj: list[TrajResult] = []
        stream_lines: list[str] = []
        if args.streams:
            stream_lines = await bench_streams(engine_url, workdir, args)
            print(f"streams done ({time.monotonic() - t_start:.0f}s)", flush=True)
        if args.pg_url:
            stream_lines += await bench_processes(engine_url, workdir, args)
            print(f"processes done ({time.monotonic() - t_start:.0f}s)", flush=True)
        if args.workloads:
            traj = await bench_trajectories(engine_url, workdir, args, bin_dir)
            print(f"trajectories done ({time.monotonic() - t_start:.0f}s)", flush=True)
    finally:
        engine.stop()
        if not args.keep_records:
            drop_records(workdir)
    print(f"\nconcurrency {args.concurrency}, {args.duration:.0f}s per throughput run, {args.n_latency} sequential "
          f"calls for latency, {os.cpu_count()} CPUs; logs in {workdir}\n")
    print(report(results, direct, args.repeat, args.concurrency))
    for r in results:
        for note in r.notes:
            print(f"note ({r.name}): {note}")
    if traj:
        print()
        print(traj_report(traj, args))
    for line in stream_lines:
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps({"small": [r.__dict__ for r in [direct, *results]],
                                               "trajectories": [r.__dict__ for r in traj]}, indent=2))
    return 0


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=5.0, help="seconds per throughput run")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--n-latency", type=int, default=200, help="sequential calls for the latency percentiles")
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="venv holding the peers (created if missing)")
    p.add_argument("--skip-peers", action="store_true", help="only the direct engine and this proxy")
    p.add_argument("--json", help="also write the results to this JSON file")
    p.add_argument("--keep-records", action="store_true",
                   help="keep the recorded databases in the work dir (removed by default: GBs after the workloads)")
    p.add_argument("--serve-mock", type=int, help=argparse.SUPPRESS)
    p.add_argument("--engine-delay", type=float, default=1.0,
                   help="seconds the mock engine takes per trajectory call (a real engine's service time)")
    p.add_argument("--rollouts", type=int, default=64, help="concurrent rollouts replaying each trajectory workload")
    p.add_argument("--traj-calls", type=int, default=40, help="calls of the Codex/Claude workloads (chat: half)")
    p.add_argument("--final-tokens", type=int, default=60_000, help="prompt tokens of their last call (chat: 1/8)")
    p.add_argument("--workloads", default="codex,claude,chat", help="trajectory workloads to run ('' for none)")
    p.add_argument("--pg-url", default=os.environ.get("OPENFORGE_BENCH_PG_URL"),
                   help="PostgreSQL for the 1 -> 4 process figure (its tables are dropped; default $OPENFORGE_BENCH_PG_URL)")
    p.add_argument("--streams", type=int, default=1000, help="concurrent streamed connections held, then SIGKILL (0: skip)")
    p.add_argument("--repeat", type=int, default=3, help="runs per target on the small request (median [min-max])")
    p.add_argument("--traj-repeat", type=int, default=None,
                   help="rounds of each trajectory workload, direct and proxied replays interleaved (default: --repeat)")
    p.add_argument("--no-wrk", dest="wrk", action="store_false", help="skip the second measurement with wrk")
    p.add_argument("--procs", type=int, default=2,
                   help="also N proxy processes on one SQLite DB, rollouts spread over them (<= 1: skip)")
    p.add_argument("--baseline-tree", type=Path,
                   help="another checkout (e.g. a git worktree of the previous commit) measured as a second proxy")
    args = p.parse_args()
    if args.traj_repeat is None:
        args.traj_repeat = args.repeat
    return args


def _terminate(*_: object) -> None:
    raise KeyboardInterrupt  # run the finally blocks that stop the servers


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    ns = parse_args()
    if ns.serve_mock:
        import uvicorn

        uvicorn.run(mock_engine_app(ns.engine_delay), host="127.0.0.1", port=ns.serve_mock, log_level="warning",
                    access_log=False)
        sys.exit(0)
    sys.exit(asyncio.run(main(ns)))
