"""The computer-use probe of bench/gui.py on two real desktops: one row per desktop with
the agreed keys and plausible values."""

from __future__ import annotations

import pytest

from environments.computer.probe import probe_computer_sandboxes

from .conftest import needs_desktop

pytestmark = [needs_desktop(), pytest.mark.slow]


async def test_probe_rows() -> None:
    rows = await probe_computer_sandboxes(2, 7)
    assert len(rows) == 2
    for r in rows:
        assert {"start_s", "screenshot_ms", "actions_per_s", "rss_mb", "pss_mb"} <= set(r)
        assert 0 < r["start_s"] < 60 and 0 < r["screenshot_ms"] < 10_000
        assert r["actions_per_s"] > 0 and 50 < r["rss_mb"] < 3000 and 0 < r["pss_mb"] <= r["rss_mb"]  # python + Xvfb + WM + app
