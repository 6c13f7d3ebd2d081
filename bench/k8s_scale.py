"""Benchmark: thousands of noop rollouts through the kubernetes backend against the fake API
server (testkit/fakes/kubernetes), cold pods vs a warm pool, side by side.

Three processes, so each figure is the orchestrator's own: the fake API server + simulated
kubelet (a child), and one orchestrator child per mode (cold, then warm) running ``--n``
rollouts through the scheduler with ``--concurrency`` rollouts (and pods) at a time. The
fake kubelet's executor does what ``pod_entry.py`` does on the wire — fetches the pod's
assignment from the control endpoint (a warm pod parks on that long poll), asks for the
tests, prints a noop ``OPENFORGE_RESULT`` line and sends its logs back — and exits at once:
**the figures measure orchestrator overhead, not pod start-up on a real cluster.**

Printed per mode: rollouts/s, pods created/s, orchestrator CPU ms per rollout (user+sys of
the orchestrator process / n), p50/p99 "requested" (``start()``) → "running" (the pod took
its assignment) under load and for 50 rollouts run one at a time afterwards (under load
the figure is mostly queueing: with everything saturated, latency ≈ concurrency /
throughput), peak RSS of the orchestrator, leaked pods/secrets after ``aclose`` (must be
0), how rollouts got their pod (idle warm pod / waited for a pool pod on its way up /
cold), outcomes.

    python bench/k8s_scale.py [--n 5000] [--concurrency 500] [--warm K] [--qps 1000] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NOTE = ("fake kubelet executor: takes the assignment, prints a noop report and exits at once — "
        "these figures measure orchestrator overhead, not pod start-up")


# -- the fake cluster (child process) ------------------------------------------------------
def serve_fake(kubeconfig: Path, namespaces: list[str], start_ms: float = 0.0) -> None:
    import aiohttp

    from environments.records import Outcome, RunnerReport
    from testkit.fakes.kubernetes import ExecResult, FakeKubeAPI, SimulatedKubelet
    from testkit.fakes.kubernetes.kubelet import SECRETS
    from testkit.fakes.kubernetes.local_executor import _secret_value
    from testkit.fakes.kubernetes.store import NAMESPACES

    holder: dict[str, Any] = {}
    report = "OPENFORGE_RESULT " + RunnerReport(status=Outcome.ok, reward=0.0, harness="noop").model_dump_json()

    async def noop_pod(pod: dict[str, Any], log: Any) -> ExecResult:
        env = {e["name"]: e for e in pod["spec"]["containers"][0].get("env") or []}
        ref = env["OPENFORGE_POD_KEY"]["valueFrom"]["secretKeyRef"]
        key = _secret_value(holder["api"].store.peek(SECRETS, pod["metadata"]["namespace"], ref["name"]), ref["key"])
        url = env["OPENFORGE_CONTROL_URL"]["value"]
        if "session" not in holder:
            holder["session"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=2000),
                                                      timeout=aiohttp.ClientTimeout(total=120))
        s = holder["session"]
        auth = {"authorization": f"Bearer {key}"}
        if start_ms:
            await asyncio.sleep(start_ms / 1000)  # container start-up before pod_entry asks
        while True:
            async with s.get(f"{url}/v1/assignment?wait=25", headers=auth) as resp:
                if resp.status == 200:
                    await resp.read()
                    break
                if resp.status != 204:
                    return ExecResult(3)
        log("OPENFORGE_PHASE agent_done")
        async with s.post(f"{url}/v1/agent-done", headers=auth, data=b"") as resp:
            await resp.read()
        log(report)
        async with s.post(f"{url}/v1/logs", headers=auth, data=_empty_tar()) as resp:
            await resp.read()
        return ExecResult(0)

    api = FakeKubeAPI(kubelet=SimulatedKubelet(executor=noop_pod, events=False)).start()
    holder["api"] = api
    for ns in namespaces:
        api.call(lambda s, _k, n=ns: s.create(NAMESPACES, "", {"metadata": {"name": n}}))
    api.write_kubeconfig(kubeconfig)
    print("READY", flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    print(json.dumps(api.stats()), flush=True)
    api.stop()


def _empty_tar() -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz"):
        pass
    return buf.getvalue()


# -- one orchestrator run (child process) --------------------------------------------------
def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


async def orchestrate(kubeconfig: Path, namespace: str, n: int, concurrency: int, warm: int, qps: float,
                      task_dir: Path, rollouts_dir: Path, probe_n: int = 50) -> dict[str, Any]:
    from contextlib import aclosing

    from environments.records import RolloutSpec
    from training.orchestrator.kubernetes import KubernetesBackend
    from training.orchestrator.kubernetes.api import KubeApi
    from training.orchestrator.scheduler import Scheduler, new_rollout_id

    backend = KubernetesBackend(rollouts_dir=rollouts_dir, kubeconfig=str(kubeconfig), namespace=namespace,
                                image_source="content", registry="bench.local:5000", max_pods=concurrency + warm,
                                create_qps=qps, create_burst=max(1, int(qps // 10)), warm_pool=warm,
                                resync_seconds=30.0, delete_grace_seconds=0)
    out: dict[str, Any] = {}
    try:
        t_warm = time.monotonic()
        if warm:
            out["prewarm_ok"] = await backend.prewarm([str(task_dir)], timeout=600)
        else:
            await backend.prewarm([])  # connect, clean orphans, start the watch: not counted either way
        out["prewarm_s"] = time.monotonic() - t_warm
        specs = [RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task_dir), harness="noop", timeout_sec=300)
                 for _ in range(n)]
        created0 = backend.stats["pods_created"]
        cpu0, t0 = time.process_time(), time.monotonic()
        results = []
        async with aclosing(Scheduler(backend, concurrency=concurrency).run(specs)) as stream:
            async for r in stream:
                results.append(r)
        wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
        created = backend.stats["pods_created"] - created0
        stats = dict(backend.stats)
        to_running = [r.timings["requested_to_running"] for r in results if "requested_to_running" in r.timings]
        statuses: dict[str, int] = {}
        for r in results:
            k = r.status.value if r.error_kind is None else f"{r.status.value}/{r.error_kind}"
            statuses[k] = statuses.get(k, 0) + 1
        # Unloaded latency: one rollout at a time (the loaded figure above is mostly queueing).
        probe = [RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task_dir), harness="noop", timeout_sec=300)
                 for _ in range(probe_n)]
        probe_lat = []
        sched1 = Scheduler(backend, concurrency=1)
        for s in probe:
            r = await sched1.run_one(s)
            if "requested_to_running" in r.timings:
                probe_lat.append(r.timings["requested_to_running"])
        out.update(probe_n=probe_n, probe_p50_ms=pct(probe_lat, 0.5) * 1000, probe_p99_ms=pct(probe_lat, 0.99) * 1000)
        out.update(n=n, wall_s=wall, rollouts_per_s=n / wall, pods_created=created, pods_created_per_s=created / wall,
                   cpu_ms_per_rollout=cpu * 1000 / n, p50_requested_to_running_ms=pct(to_running, 0.5) * 1000,
                   p99_requested_to_running_ms=pct(to_running, 0.99) * 1000, statuses=statuses,
                   warm_claims=stats["warm_claims"], warm_waits=stats["warm_waits"], cold_starts=stats["cold_starts"],
                   watch_events=backend.watcher.events if backend.watcher else 0,
                   peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    finally:
        await backend.aclose()
    api = await KubeApi.connect(namespace, kubeconfig=str(kubeconfig))
    try:
        out["leaked_pods"] = len((await api.list("Pod", "app.kubernetes.io/managed-by=openforge"))[0])
        out["leaked_secrets"] = len((await api.list("Secret", "app.kubernetes.io/managed-by=openforge"))[0])
    finally:
        await api.close()
    return out


def bench_task(tmp: Path) -> Path:
    from environments.taskdir import TaskConfig, TaskSection, write_task

    cfg = TaskConfig(task=TaskSection(name="bench-noop", description="noop"))
    cfg.environment.cpus, cfg.environment.memory_mb = 0.5, 512
    files = {"environment/Dockerfile": "FROM debian:bookworm-slim\nWORKDIR /app\n",
             "tests/test.sh": "#!/usr/bin/env bash\necho 0 > \"${LOGS_DIR:-/logs}/verifier/reward.txt\"\n"}
    return write_task(tmp / "bench-noop", cfg, "Do nothing.", files).path


# -- driver --------------------------------------------------------------------------------
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--concurrency", type=int, default=500)
    p.add_argument("--warm", type=int, default=None, help="warm pods per image (default: --concurrency)")
    p.add_argument("--qps", type=float, default=1000.0, help="pod creations per second (token bucket)")
    p.add_argument("--modes", default="cold,warm")
    p.add_argument("--start-ms", type=float, default=0.0,
                   help="simulated container start-up before the pod asks for its assignment (default 0)")
    p.add_argument("--json", type=Path)
    p.add_argument("--serve-fake", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    warm = a.concurrency if a.warm is None else a.warm
    if a.serve_fake:
        serve_fake(a.serve_fake, ["bench-cold", "bench-warm"], a.start_ms)
        return 0
    if a.child:
        kubeconfig, mode, task, rollouts = a.child.split(",")
        res = asyncio.run(orchestrate(Path(kubeconfig), f"bench-{mode}", a.n, a.concurrency,
                                      warm if mode == "warm" else 0, a.qps, Path(task), Path(rollouts)))
        print("RESULT " + json.dumps(res), flush=True)
        return 0

    from rich.console import Console
    from rich.table import Table

    console = Console()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="k8s-bench-") as tmp_s:
        tmp = Path(tmp_s)
        os.environ["OPENFORGE_HOME"] = str(tmp / "home")
        task = bench_task(tmp)
        kubeconfig = tmp / "kubeconfig"
        fake = subprocess.Popen([sys.executable, __file__, "--serve-fake", str(kubeconfig), "--start-ms", str(a.start_ms)],
                                stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env=os.environ)
        try:
            assert fake.stdout is not None and fake.stdin is not None
            if fake.stdout.readline().strip() != "READY":
                console.print("[red]fake API server did not start[/red]")
                return 1
            for mode in a.modes.split(","):
                console.print(f"[bold]{mode}[/bold]: {a.n} noop rollouts, concurrency {a.concurrency}"
                              + (f", warm pool {warm}" if mode == "warm" else ""))
                child = subprocess.run([sys.executable, __file__, "--n", str(a.n), "--concurrency", str(a.concurrency),
                                        "--warm", str(warm), "--qps", str(a.qps),
                                        "--child", f"{kubeconfig},{mode},{task},{tmp / ('rollouts-' + mode)}"],
                                       capture_output=True, text=True, env=os.environ, check=False)
                line = next((ln for ln in child.stdout.splitlines() if ln.startswith("RESULT ")), None)
                if line is None:
                    console.print(f"[red]{mode} run failed[/red]\n{child.stderr[-3000:]}")
                    return 1
                results[mode] = json.loads(line[len("RESULT "):])
                console.print(f"{mode}: {json.dumps(results[mode])}")
            try:
                out, _ = fake.communicate(input="", timeout=300)
                stats = json.loads(out.strip().splitlines()[0]) if out.strip() else {}
            except (subprocess.TimeoutExpired, ValueError):
                stats = {}
        finally:
            if fake.poll() is None:
                fake.kill()
                fake.wait()
    table = Table(title=f"kubernetes backend vs fake API: {a.n} noop rollouts, concurrency cap {a.concurrency}"
                        + (f", container start {a.start_ms:g} ms" if a.start_ms else ""))
    table.add_column("figure")
    for mode in results:
        table.add_column(mode + (f" (K={warm})" if mode == "warm" else ""), justify="right")
    rows = [("rollouts/s", "rollouts_per_s", "{:.1f}"), ("pods created/s", "pods_created_per_s", "{:.1f}"),
            ("orchestrator CPU ms / rollout", "cpu_ms_per_rollout", "{:.2f}"),
            ("requested→running p50 ms", "p50_requested_to_running_ms", "{:.1f}"),
            ("requested→running p99 ms", "p99_requested_to_running_ms", "{:.1f}"),
            ("orchestrator peak RSS MB", "peak_rss_mb", "{:.0f}"), ("wall s", "wall_s", "{:.1f}"),
            ("unloaded requested→running p50 ms (1 at a time)", "probe_p50_ms", "{:.1f}"),
            ("unloaded requested→running p99 ms (1 at a time)", "probe_p99_ms", "{:.1f}"),
            ("pods: warm idle / waited for pool / cold", None, None), ("leaked pods", "leaked_pods", "{}"),
            ("leaked secrets", "leaked_secrets", "{}"), ("outcomes", "statuses", "{}")]
    for label, key, fmt in rows:
        if key is None:
            table.add_row(label, *(f"{r['warm_claims']} / {r['warm_waits']} / {r['cold_starts']}"
                                   for r in results.values()))
        else:
            table.add_row(label, *(fmt.format(r[key]) if not isinstance(r[key], dict) else
                                   ", ".join(f"{k}={v}" for k, v in r[key].items()) for r in results.values()))
    console.print(table)
    console.print(NOTE + (f" (plus a simulated container start of {a.start_ms:g} ms per pod)" if a.start_ms else ""))
    console.print(f"fake API server: {stats.get('requests', '?')} requests, {stats.get('writes', '?')} writes")
    if a.json:
        a.json.write_text(json.dumps({"n": a.n, "concurrency": a.concurrency, "warm": warm, "qps": a.qps,
                                      "start_ms": a.start_ms,
                                      "results": results, "fake": stats, "note": NOTE}, indent=2))
    leaked = sum(r["leaked_pods"] + r["leaked_secrets"] for r in results.values())
    return 1 if leaked else 0


if __name__ == "__main__":
    sys.exit(main())
