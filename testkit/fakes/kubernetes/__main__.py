"""Run the fake API server as its own process (benchmarks keep it off their GIL):

    python -m testkit.fakes.kubernetes --port 0 --ready-file F [--nodes JSON] [--executor mod:fn] [--token T]

Writes ``{"url": ...}`` to the ready file once listening and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import threading
from pathlib import Path

from testkit.fakes.kubernetes.kubelet import SimulatedKubelet, instant_success
from testkit.fakes.kubernetes.scheduler import Node
from testkit.fakes.kubernetes.server import FakeKubeAPI


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m testkit.fakes.kubernetes")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ready-file", required=True)
    ap.add_argument("--nodes", help='JSON list of {"name","cpu","memory","pods"}')
    ap.add_argument("--executor", help="module:function of an async executor (default: exit 0 at once)")
    ap.add_argument("--token")
    ap.add_argument("--no-events", action="store_true")
    ap.add_argument("--kubelet-options", default="{}", help="JSON of SimulatedKubelet keyword options")
    args = ap.parse_args()
    executor = instant_success
    if args.executor:
        mod, _, fn = args.executor.partition(":")
        executor = getattr(importlib.import_module(mod), fn)
    nodes = [Node(**n) for n in json.loads(args.nodes)] if args.nodes else None
    kubelet = SimulatedKubelet(executor=executor, nodes=nodes, events=not args.no_events,
                               **json.loads(args.kubelet_options))
    api = FakeKubeAPI(kubelet=kubelet, host=args.host, port=args.port, token=args.token).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    Path(args.ready_file).write_text(json.dumps({"url": api.url}))
    stop.wait()
    api.stop()


if __name__ == "__main__":
    main()
