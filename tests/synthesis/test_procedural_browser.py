"""The browser-use families through the synthesis ``procedural`` backend: registered under
their own domain (never proposed for claw), rendered by themselves, covered by the packaged
pool, and a real run (propose → prune → build → oracle/no-op test) verifies browser tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.browser.families import BrowserTask
from environments.taskdir import validate_task, write_task
from synthesis.pools import packaged_pool
from synthesis.procedural.families import FAMILIES, FAMILY_DOMAIN, FAMILY_SERVICES, generate
from synthesis.procedural.render import task_config, task_files
from tests.environments.browser.conftest import needs_chromium
from tests.synthesis.checks import sandbox_checker

BROWSER = sorted(f for f, d in FAMILY_DOMAIN.items() if d == "browser-use")


def test_browser_families_are_registered_under_their_domain() -> None:
    assert len(BROWSER) >= 5
    assert {s for f in BROWSER for s in FAMILY_SERVICES[f]} == {"shop", "travel", "forum", "docs"}
    assert all(f in FAMILIES for f in BROWSER)


def test_packaged_browser_use_pool_covers_its_families() -> None:
    items = packaged_pool("browser-use")
    assert {f for i in items for f in i.families} == set(BROWSER)
    assert all(i.domain == "browser-use" for i in items)


@pytest.mark.parametrize("family", BROWSER)
def test_backend_generates_and_renders_browser_tasks(family: str, tmp_path: Path) -> None:
    spec = generate(family, 23)
    assert isinstance(spec, BrowserTask) and spec.services == FAMILY_SERVICES[family]
    assert task_files(spec) == task_files(generate(family, 23))
    cfg = task_config(spec, purpose="rl", run_id="r1")
    assert cfg.openforge.domain == "browser-use" and cfg.openforge.synth_run_id == "r1"
    td = write_task(tmp_path / spec.name, cfg, spec.instruction, task_files(spec))
    assert validate_task(td.path) == []


@pytest.mark.slow
@needs_chromium
async def test_procedural_run_verifies_browser_tasks(db_engine, openforge_home: Path) -> None:
    from openforge.settings import get_settings
    from synthesis.config import SynthConfig
    from synthesis.pipeline import synthesize

    report = await synthesize(SynthConfig(domain="browser-use", n=2, workers=2, seed=5, max_rounds=2),
                              engine=db_engine, settings=get_settings(),
                              checker=sandbox_checker())
    assert report.status == "done", report
    for d in report.verified_dirs:
        assert Path(d).name.startswith("browser-use-") and validate_task(Path(d)) == []
