"""What a finished pod reports: the runner's report from the proxy's finish record (first
choice) or the container log's ``OPENFORGE_RESULT`` line (fallback; the log is kept as
``runner.log``), and the pod's Warning events to explain a failure."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from environments.records import RUNNER_REPORT_PREFIX, Outcome, RunnerReport
from training.orchestrator.kubernetes.api import KubeApi, KubeError
from training.orchestrator.kubernetes.manifest import CONTAINER

log = logging.getLogger(__name__)


async def log_report(api: KubeApi, pod: str, root: Path) -> tuple[RunnerReport | None, str | None]:
    """The container log into ``root/runner.log``; the runner's report line from it (or why not)."""
    try:
        text = await api.pod_logs(pod, CONTAINER)
    except KubeError as exc:
        log.debug("logs of %s: %s", pod, exc)
        return None, None
    return await asyncio.to_thread(_keep_log, root / "runner.log", text)


def _keep_log(path: Path, text: str) -> tuple[RunnerReport | None, str | None]:
    """Append ``text`` to ``path``; the last ``OPENFORGE_RESULT`` line parsed (or why not)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(text if text.endswith("\n") or not text else text + "\n")
    marker = RUNNER_REPORT_PREFIX.strip()
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith(marker):
            try:
                return RunnerReport.model_validate_json(line[len(marker):].strip()), None
            except ValidationError as exc:
                return None, f"unparsable {marker} line: {exc.errors()[:1]}"
    return None, None


async def proxy_report(proxy: Any | None, rollout_id: str) -> RunnerReport | None:
    """The runner's finish record on the proxy (``proxy``: a ``ProxyAdminClient``, optional)."""
    if proxy is None:
        return None
    try:
        row = await proxy.get(rollout_id)
    except Exception as exc:  # noqa: BLE001 - the proxy is optional here
        log.debug("proxy record of %s: %s", rollout_id, exc)
        return None
    if not row.get("finished_at") or "reported_status" not in (row.get("metadata") or {}):
        return None
    try:
        return RunnerReport(status=Outcome(row["status"]), reward=row.get("reward"), error_kind=row.get("error_kind"),
                            error=row.get("error"), timings=row.get("timings") or {})
    except ValueError:
        return None


def merged(from_log: RunnerReport | None, from_proxy: RunnerReport | None) -> RunnerReport | None:
    """The log's report with the proxy's status where they differ (e.g. the proxy's sticky
    engine_error); the proxy's alone when the log has none."""
    if from_proxy is None:
        return from_log
    if from_log is None:
        return from_proxy
    if from_proxy.status != from_log.status:
        from_log.status, from_log.error_kind, from_log.error = (from_proxy.status, from_proxy.error_kind,
                                                                from_proxy.error)
    return from_log


async def with_events(api: KubeApi, message: str, pod: str) -> str:
    """``message`` plus the pod's latest Warning events, the scheduler's and kubelet's own
    account of a failure (best effort: without RBAC on events the message stays as is)."""
    try:
        async with asyncio.timeout(10):
            events = await api.warning_events(pod)
    except (KubeError, TimeoutError) as exc:
        log.debug("events of %s: %s", pod, exc)
        return message
    news = [str(e) for e in events if e.message not in message]  # not what the message says already
    return message + (f" | events: {'; '.join(news)}" if news else "")
