"""The action executor on a real Chromium against the mock sites: every Table A3 action
does what it says, failures come back as results (never exceptions), the per-action time
limit holds, the oracle replay scrolls to off-screen targets, and the remote-browser option
attaches over CDP."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import tempfile
import time
from pathlib import Path

import pytest

from environments.browser.actions import action_from_dict, parse_action
from environments.browser.executor import ActionExecutor
from environments.browser.replay import replay
from environments.browser.session import BrowserConfig, BrowserSession
from tests.environments.browser.conftest import CHROMIUM, needs_chromium

pytestmark = [pytest.mark.slow, needs_chromium]


@pytest.fixture
def sites(tmp_path: Path):
    from environments.claw.process import ClawServer

    threads = [{"id": f"t{i}", "board": "general", "title": f"Thread number {i}", "author": "mod",
                "posts": [{"id": f"t{i}-p1", "author": "mod", "body": "hi"}]} for i in range(1, 41)]
    (tmp_path / "forum.json").write_text(json.dumps({"user": {"name": "alex_d"}, "threads": threads, "boards": [
        {"id": "general", "name": "General", "description": "All"}]}))
    with ClawServer(["shop", "forum", "docs"], tmp_path, port=0) as srv:
        yield srv.url


async def _act(ex: ActionExecutor, action: dict):
    return await ex.execute(action_from_dict(action))


async def test_every_action_on_a_real_browser(sites: str) -> None:
    async with BrowserSession(BrowserConfig(sites_url=sites)) as b:
        ex = ActionExecutor(b, action_timeout=20)
        r = await _act(ex, {"action": "goto", "url": "shop.test"})
        assert r.ok and "(HTTP 200)" in r.message and await b.page.title() == "Home - Northwind Market"
        box = await b.page.locator("input[name=q]").bounding_box()
        assert (await _act(ex, {"action": "mouse_move", "x": 10, "y": 10})).ok
        assert (await _act(ex, {"action": "click", "x": box["x"] + 5, "y": box["y"] + 5})).ok
        assert (await _act(ex, {"action": "type", "text": "kettle"})).ok
        assert (await _act(ex, {"action": "key", "keys": "enter"})).message == "pressed Enter"
        assert b.page.url == "http://shop.test/search?q=kettle"
        assert (await _act(ex, {"action": "go_back"})).ok and b.page.url == "http://shop.test/"
        # drag across the heading selects its text
        h1 = await b.page.locator("h1").bounding_box()
        drag = {"action": "drag", "x": h1["x"] + 1, "y": h1["y"] + h1["height"] / 2, "to_x": h1["x"] + 120,
                "to_y": h1["y"] + h1["height"] / 2}
        assert (await _act(ex, drag)).ok
        assert len(await b.page.evaluate("window.getSelection().toString()")) > 3
        # scrolling moves the page (a long board) and back
        await _act(ex, {"action": "goto", "url": "http://forum.test/b/general"})
        assert (await _act(ex, {"action": "scroll", "amount": 500})).ok
        assert await b.page.evaluate("window.scrollY") > 100
        await _act(ex, {"action": "scroll", "amount": -2000})
        assert await b.page.evaluate("window.scrollY") == 0
        assert (await _act(ex, {"action": "hscroll", "amount": 200})).ok
        # tabs
        r = await _act(ex, {"action": "new_tab", "url": "docs.test"})
        assert r.ok and len(b.pages) == 2 and b.active == 1 and b.page.url == "http://docs.test/"
        assert (await _act(ex, {"action": "tab_focus", "index": 0})).ok and b.page.url.startswith("http://forum.test/")
        bad = await _act(ex, {"action": "tab_focus", "index": 5})
        assert not bad.ok and "no tab 5" in bad.message
        # waiting, ending
        t = time.monotonic()
        assert (await _act(ex, {"action": "wait", "seconds": 0.3})).ok and time.monotonic() - t >= 0.3
        off = await _act(ex, {"action": "click", "x": 1280, "y": 5})
        assert not off.ok and "outside the 1280×720 viewport" in off.message
        done = await _act(ex, {"action": "answer", "text": "42"})
        assert done.done and done.answer == "42"
        stop = await ex.execute(parse_action('{"action": "terminate", "status": "failure"}'))
        assert stop.done and stop.status == "failure"
        png = await b.screenshot()
        from environments.gui.observation import png_size

        assert png_size(png) == (1280, 720)


async def test_popups_become_the_active_tab(sites: str) -> None:
    async with BrowserSession(BrowserConfig(sites_url=sites)) as b:
        ex = ActionExecutor(b)
        await _act(ex, {"action": "goto", "url": "http://shop.test/"})
        await b.page.evaluate("window.open('http://docs.test/', '_blank')")
        for _ in range(50):
            if len(b.pages) == 2:
                break
            await asyncio.sleep(0.05)
        assert len(b.pages) == 2 and b.active == 1


async def test_a_hanging_navigation_hits_the_action_time_limit(sites: str) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections, never answers
    try:
        async with BrowserSession(BrowserConfig(sites_url=sites, navigation_timeout=30)) as b:
            ex = ActionExecutor(b, action_timeout=1.5)
            t = time.monotonic()
            r = await _act(ex, {"action": "goto", "url": f"http://127.0.0.1:{silent.getsockname()[1]}/"})
            assert not r.ok and "timed out after 1.5s" in r.message and time.monotonic() - t < 5
    finally:
        silent.close()


async def test_replay_scrolls_to_an_off_screen_target(sites: str, tmp_path: Path) -> None:
    steps = [{"action": "goto", "url": "http://forum.test/b/general"},
             {"action": "click", "target": "a[data-thread='t40']"}, {"action": "answer", "text": "found"}]
    async with BrowserSession(BrowserConfig(sites_url=sites)) as b:
        done = await replay(steps, b, agent_logs=tmp_path)
        assert b.page.url == "http://forum.test/t/t40"
    kinds = [d["action"]["action"] for d in done]
    assert kinds[0] == "goto" and "scroll" in kinds and kinds[-2:] == ["click", "answer"]
    click = done[-2]["action"]
    assert 0 <= click["y"] < 720 and isinstance(click["x"], float)
    assert (tmp_path / "answer.txt").read_text() == "found"
    shots = sorted((tmp_path / "screenshots").glob("step_*.png"))
    assert [p.name for p in shots] == [f"step_{i:03d}.png" for i in range(len(steps) + 1)]


async def test_remote_browser_over_cdp(sites: str) -> None:
    """``cdp_url``: attach to a Chromium started elsewhere (here: a local one with a debugging port)."""
    port = sites.rsplit(":", 1)[1]
    profile = tempfile.mkdtemp(prefix="openforge-cdp-")
    proc = await asyncio.create_subprocess_exec(
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0", f"--user-data-dir={profile}",
        f"--host-resolver-rules=MAP *.test 127.0.0.1:{port}", "about:blank",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
    try:
        active = Path(profile) / "DevToolsActivePort"
        for _ in range(200):
            if active.is_file() and active.read_text().strip():
                break
            await asyncio.sleep(0.1)
        cdp = f"http://127.0.0.1:{active.read_text().split()[0]}"
        async with BrowserSession(BrowserConfig(cdp_url=cdp)) as b:
            ex = ActionExecutor(b)
            r = await _act(ex, {"action": "goto", "url": "http://docs.test/page/config"})
            assert r.ok and "Configuration" in await b.page.title()
            assert (await b.page.evaluate("[innerWidth, innerHeight]")) == [1280, 720]
    finally:
        os.killpg(proc.pid, 9)
        await proc.wait()
        import shutil

        shutil.rmtree(profile, ignore_errors=True)
