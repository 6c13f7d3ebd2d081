"""Red team: every attack of ``testkit/redteam.py`` as a ``command``-harness rollout on
each sandbox backend; prints attacks × backends (broken / SUCCEEDED with the outcome) and,
per backend, how many were tried and broken. Exit status 1 when any attack succeeded.

    python bench/redteam.py [--backends local,docker,kubernetes] [--only NAME,...] [--json OUT]

local = bubblewrap; docker needs an engine and the base image (skipped with the reason
otherwise); kubernetes = the fake cluster of testkit/fakes/kubernetes/cluster.py (its kubelet runs pods
through bubblewrap and enforces the run's NetworkPolicy and limits as a node would).
Every backend gets the same proxy (a fake engine) so the token attacks run too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from testkit.redteam import ATTACKS, Verdict, attack_context, run_attacks

console = Console()


async def _local(tasks: Path, ctx: Any, proxy: Any, db: Any, attacks: list) -> list[Verdict]:
    from training.orchestrator.local import LocalBackend

    backend = LocalBackend(isolation="bubblewrap")
    try:
        return await run_attacks(backend, tasks, ctx, attacks=attacks, proxy=proxy, db=db)
    finally:
        await backend.aclose()


async def _docker(tasks: Path, ctx: Any, proxy: Any, db: Any, attacks: list) -> list[Verdict]:
    from training.orchestrator.docker_backend import (
        DockerBackend,
        docker_unavailable_reason,
    )

    reason = docker_unavailable_reason()
    if reason:
        console.print(f"[yellow]docker skipped: {reason}[/]")
        return []
    backend = DockerBackend()
    try:
        return await run_attacks(backend, tasks, ctx, attacks=attacks, proxy=proxy, db=db)
    finally:
        await backend.aclose()


async def _kubernetes(tasks: Path, ctx: Any, proxy: Any, db: Any, attacks: list) -> list[Verdict]:
    from testkit.fakes.kubernetes.cluster import LocalCluster
    from training.orchestrator.kubernetes import KubernetesBackend

    ns, registry = "openforge-redteam", "registry.test:5000"
    with LocalCluster(tasks.parent, namespace=ns, registry=registry) as cluster:
        backend = KubernetesBackend(rollouts_dir=tasks.parent / "k8s-rollouts", kubeconfig=str(cluster.kubeconfig),
                                    namespace=ns, registry=registry, image_source="content", images=cluster.images,
                                    resync_seconds=2.0, delete_grace_seconds=2, proxy=proxy)

        async def on_task(task: Path) -> None:
            await cluster.image(task)

        try:
            return await run_attacks(backend, tasks, ctx, attacks=attacks, proxy=proxy, db=db, on_task=on_task)
        finally:
            await backend.aclose()


RUNNERS = {"local": _local, "docker": _docker, "kubernetes": _kubernetes}


async def main(args: argparse.Namespace) -> int:
    from storage.db import make_engine
    from storage.migrate import upgrade
    from testkit.fakes.vllm import FakeVLLM
    from training.engines.openai_compat import OpenAICompatEngine
    from training.proxy.server import ProxyServer

    attacks = [a for a in ATTACKS if not args.only or a.name in args.only.split(",")]
    results: dict[str, list[Verdict]] = {}
    with tempfile.TemporaryDirectory(prefix="openforge-redteam-") as tmp:
        home = Path(tmp) / "home"
        os.environ["OPENFORGE_HOME"] = str(home)
        from openforge.settings import get_settings

        get_settings.cache_clear()
        url = f"sqlite:///{home / 'openforge.db'}"
        home.mkdir(parents=True)
        db = make_engine(url)
        upgrade(url, db)
        with attack_context(home) as ctx, FakeVLLM() as fake:
            engine = OpenAICompatEngine(fake.base_url, model=fake.model)
            async with ProxyServer(engine, db_url=url) as server:
                proxy = server.client()
                try:
                    for name in args.backends.split(","):
                        ctx.other_rollout_id = None
                        results[name] = await RUNNERS[name](Path(tmp) / name / "tasks", ctx, proxy, db, attacks)
                finally:
                    await proxy.aclose()
        db.dispose()
    table = Table(title="red team: attacks × backends")
    table.add_column("attack")
    for name in results:
        table.add_column(name)
    by = {name: {v.attack: v for v in vs} for name, vs in results.items()}
    for a in attacks:
        cells = []
        for name in results:
            v = by[name].get(a.name)
            cells.append("-" if v is None else (f"broken ({v.outcome})" if v.broken else f"[red]SUCCEEDED[/] {v.why}"))
        table.add_row(a.name, *cells)
    console.print(table)
    failed = 0
    for name, vs in results.items():
        broken = sum(v.broken for v in vs)
        failed += len(vs) - broken
        console.print(f"{name}: {len(vs)} attacks tried, {broken} broken, {len(vs) - broken} succeeded")
    if args.json:
        Path(args.json).write_text(json.dumps({n: [v.__dict__ for v in vs] for n, vs in results.items()}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backends", default="local,docker,kubernetes")
    p.add_argument("--only", default="", help="comma-separated attack names")
    p.add_argument("--json")
    sys.exit(asyncio.run(main(p.parse_args())))
