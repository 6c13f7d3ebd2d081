"""In-sandbox init: relay the proxy's loopback port to a unix socket, then exec the runner.

Run by path (stdlib only, so it starts fast and imports nothing of ours)::

    python -P sandbox_init.py --listen 127.0.0.1:PORT --unix /run/openforge/PORT.sock [--listen ... --unix ...] -- CMD...

Each ``--listen``/``--unix`` pair is one relay (the fake kubelet relays the proxy and the
control endpoint of a pod). The listening sockets are bound before the fork, so the ports
are ready when CMD starts. The relay child dies with its parent (PR_SET_PDEATHSIG) and with
the sandbox's PID namespace.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
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
    os.execvp(cmd[0], cmd)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
