"""Registers the computer-use task families (environments.computer.families) with the
procedural backend under domain ``computer-use``: each becomes a :data:`FAMILIES` entry
whose tasks render themselves (``GuiTask.task_config`` / ``task_files``)."""

from __future__ import annotations

import random

from environments.computer import families as gui
from synthesis.procedural.families import family
from synthesis.procedural.spec import Difficulty


def _register(name: str) -> None:
    def generate(rng: random.Random, difficulty: Difficulty) -> gui.GuiTask:
        return gui.FAMILIES[name](rng, difficulty)

    family(name, [], domain="computer-use")(generate)


for _name in sorted(gui.FAMILIES):
    _register(_name)
