"""Registers the browser-use task families (environments.browser.families) with the
procedural backend under domain ``browser-use``: each becomes a :data:`FAMILIES` entry
whose tasks render themselves (``BrowserTask.task_config`` / ``task_files``)."""

from __future__ import annotations

import random

from environments.browser import families as web
from synthesis.procedural.families import family
from synthesis.procedural.spec import Difficulty


def _register(name: str) -> None:
    def generate(rng: random.Random, difficulty: Difficulty) -> web.BrowserTask:
        return web.FAMILIES[name](rng, difficulty)

    family(name, list(web.FAMILY_SITES[name]), domain="browser-use")(generate)


for _name in sorted(web.FAMILIES):
    _register(_name)
