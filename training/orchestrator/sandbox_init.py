"""In-sandbox init: relay the proxy's loopback port to a unix socket, then exec the runner.

Run by path (stdlib only, so it starts fast and imports nothing of ours)::

    python -P sandbox_init.py --listen 127.0.0.1:PORT --unix /run/openforge/PORT.sock [--listen ... --unix ...] -- CMD...

Each ``--listen``/``--unix`` pair is one relay (the fake kubelet relays the proxy and the
control endpoint of a pod). The listening sockets are bound before the fork, so the ports
are ready when CMD starts. The relay child dies with its parent (PR_SET_PDEATHSIG) and with
the sandbox's PID namespace.

When CMD is ``<this interpreter> -P -m MODULE ARGS...`` (the runner, as every backend starts
it), MODULE runs in this process (``runpy``, as ``-m`` does) instead of a fresh interpreter:
the same process, flags and environment, without a second interpreter start and a second
import of asyncio (about 55 ms of CPU per rollout). Any other CMD is exec'd.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import runpy
import signal
import socket
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy ``reader`` to ``writer`` until EOF, then half-close ``writer`` (the host side of
    the relay, training/orchestrator/relay.py, uses it too)."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            if writer.can_write_eof():
                writer.write_eof()
        except (OSError, RuntimeError):
            pass


async def _serve_all(pairs: list[tuple[socket.socket, str]]) -> None:
    await asyncio.gather(*(_serve(sock, path) for sock, path in pairs))


async def _serve(sock: socket.socket, unix_path: str) -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            ur, uw = await asyncio.open_unix_connection(unix_path)
        except OSError:
            w.close()
            return
        try:
            await asyncio.gather(pipe(r, uw), pipe(ur, w))
        finally:
            w.close()
            uw.close()

    server = await asyncio.start_server(handle, sock=sock)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    if "--" not in argv:
        sys.stderr.write("sandbox_init: usage: --listen HOST:PORT --unix PATH -- CMD...\n")
        return 2
    split = argv.index("--")
    opts, cmd = argv[:split], argv[split + 1 :]
    listens = [opts[i + 1] for i, o in enumerate(opts) if o == "--listen"]
    unixes = [opts[i + 1] for i, o in enumerate(opts) if o == "--unix"]
    if not listens or len(listens) != len(unixes):
        sys.stderr.write("sandbox_init: each --listen needs its --unix\n")
        return 2
    pairs: list[tuple[socket.socket, str]] = []
    for listen, unix_path in zip(listens, unixes):
        host, _, port = listen.rpartition(":")
        family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), int(port)))
        sock.listen(128)
        pairs.append((sock, unix_path))
    pid = os.fork()
    if pid == 0:
        try:
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        try:
            asyncio.run(_serve_all(pairs))
        finally:
            os._exit(0)
    for sock, _ in pairs:
        sock.close()
    module = same_interpreter_module(cmd)
    if module is not None:
        sys.argv = [cmd[0], *cmd[4:]]  # runpy puts the module's path first, as -m does
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    os.execvp(cmd[0], cmd)
    return 127  # not reached


def same_interpreter_module(cmd: list[str]) -> str | None:
    """MODULE when ``cmd`` is ``<this interpreter> -P -m MODULE ...`` run with the same
    flags this process has (``-P`` only); else None (the command is exec'd)."""
    if len(cmd) < 4 or cmd[1:3] != ["-P", "-m"] or not sys.flags.safe_path:
        return None
    if os.path.abspath(cmd[0]) != os.path.abspath(sys.executable):
        return None
    if sys.flags.isolated or sys.flags.no_site or sys.flags.ignore_environment or sys.flags.optimize:
        return None
    return cmd[3]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
