"""The run's NetworkPolicy: rollout pods may reach the control endpoint and the proxies the
rollouts name (and DNS when one was named by host name), nothing else. The policy grows as
rollouts name new proxy addresses; it is created once at setup and replaced after that."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

from environments.records import ErrorKind
from training.orchestrator.backend import SandboxError
from training.orchestrator.kubernetes.api import KubeApi
from training.orchestrator.kubernetes.manifest import (
    EgressTarget,
    OwnerRef,
    egress_targets,
    network_policy,
)


def host_port(url: str) -> tuple[str, int]:
    """``(host, port)`` of a URL (the scheme's default port when it names none)."""
    parts = urlsplit(url)
    if not parts.hostname:
        raise SandboxError(f"URL {url!r} has no host")
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


class EgressPolicy:
    """The NetworkPolicy ``name`` over the pods labelled ``labels``; ``allow(host, port)``
    adds a destination (resolved to addresses: ipBlocks match IPs only)."""

    def __init__(self, api: KubeApi, name: str, namespace: str, labels: dict[str, str], *,
                 owner: OwnerRef | None, extra_rules: list[dict[str, Any]] | None) -> None:
        self.api, self.name, self.namespace, self.labels = api, name, namespace, labels
        self.owner, self.extra_rules = owner, extra_rules
        self._targets: set[EgressTarget] = set()
        self._hosts: set[tuple[str, int]] = set()
        self._allow_dns = False
        self._lock = asyncio.Lock()

    async def allow(self, host: str, port: int, *, create: bool = False) -> None:
        """Let pods reach ``host:port``; ``create`` makes the policy (the first call, at setup)."""
        if (host, port) in self._hosts and not create:
            return
        async with self._lock:
            if (host, port) in self._hosts and not create:
                return
            try:
                infos = await asyncio.to_thread(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
                resolved = sorted({i[4][0] for i in infos})
            except OSError as exc:
                raise SandboxError(f"cannot resolve {host!r} for the NetworkPolicy: {exc}",
                                   kind=ErrorKind.start_failed) from exc
            self._targets.update(egress_targets(host, port, resolved))
            self._allow_dns = self._allow_dns or not _is_ip(host)
            self._hosts.add((host, port))
            body = network_policy(self.name, self.namespace, self.labels, dict(self.labels),
                                  sorted(self._targets, key=lambda t: (t.cidr, t.port)), allow_dns=self._allow_dns,
                                  owner=self.owner, extra_rules=self.extra_rules)
            if create:
                await self.api.create(body)
            else:
                await self.api.replace_network_policy(body)
