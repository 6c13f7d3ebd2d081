"""Offline procedural generators of verified claw tasks (zero cost, deterministic per seed).

``families`` holds the task families, ``fixtures`` the seeded random material, ``verifier``
the check language rendered into ``tests/test.sh``, ``render`` the task-dir writer, ``lookup`` the single-tool lookup family (graded checks);
``computer`` registers the computer-use families (environments.computer.families),
``browser`` the browser-use ones (environments.browser.families).
"""

from synthesis.procedural.families import FAMILIES, FAMILY_SERVICES, generate
from synthesis.procedural import lookup as _lookup  # noqa: F401,E402 - registers the single-tool lookup families
from synthesis.procedural import computer as _computer  # noqa: F401,E402 - registers the computer-use families
from synthesis.procedural import browser as _browser  # noqa: F401,E402 - registers the browser-use families
from synthesis.procedural.spec import DIFFICULTIES, ProceduralTask, Step

__all__ = ["DIFFICULTIES", "FAMILIES", "FAMILY_SERVICES", "ProceduralTask", "Step", "generate"]
