"""The browser-sandbox probe bench/gui.py calls: real Chromium sandboxes started at once,
each reporting start time, screenshot latency, actions/s and memory."""

from __future__ import annotations

import pytest

from tests.environments.browser.conftest import needs_chromium


@pytest.mark.slow
@needs_chromium
async def test_probe_reports_every_key_for_each_sandbox() -> None:
    from environments.browser.probe import probe_browser_sandboxes

    rows = await probe_browser_sandboxes(2, 8)
    assert len(rows) == 2
    for row in rows:
        assert {"start_s", "screenshot_ms", "actions_per_s", "rss_mb"} <= set(row)
        assert 0 < row["start_s"] < 120 and 0 < row["screenshot_ms"] < 10_000
        assert row["actions_per_s"] > 0 and row["rss_mb"] > 100  # Chromium alone is well over 100 MB
        assert 0 < row["pss_mb"] <= row["rss_mb"]
