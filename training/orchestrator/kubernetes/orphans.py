"""Objects of an ``instance`` left by its earlier runs (a crashed orchestrator's pods, Secrets,
NetworkPolicies, owner ConfigMaps): found by label, deleted at setup."""

from __future__ import annotations

import asyncio
import logging

from training.orchestrator.kubernetes.api import KubeApi
from training.orchestrator.kubernetes.manifest import (
    LABEL_INSTANCE,
    LABEL_RUN,
    MANAGED_BY,
    selector,
)

log = logging.getLogger(__name__)

#: What a run creates (and so what an earlier run may have left).
KINDS = ("Pod", "Secret", "NetworkPolicy", "ConfigMap")


async def remove_orphans(api: KubeApi, labels: dict[str, str]) -> int:
    """Delete the objects of ``labels``' instance whose run label is not ``labels``' run;
    returns how many pods went."""
    mine = {MANAGED_BY: "openforge", LABEL_INSTANCE: labels[LABEL_INSTANCE]}
    removed = 0
    for kind in KINDS:
        items, _ = await api.list(kind, selector(mine))
        stale = [i["metadata"]["name"] for i in items
                 if (i["metadata"].get("labels") or {}).get(LABEL_RUN) != labels[LABEL_RUN]]
        for chunk in range(0, len(stale), 64):
            done = await asyncio.gather(*(api.delete(kind, n, grace_seconds=0 if kind == "Pod" else None)
                                          for n in stale[chunk:chunk + 64]), return_exceptions=True)
            removed += sum(1 for d in done if d is True and kind == "Pod")
        if stale:
            log.info("removed %d orphan %s object(s) of earlier runs", len(stale), kind)
    return removed
