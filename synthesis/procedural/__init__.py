"""Offline procedural generators of verified claw tasks (zero cost, deterministic per seed).

``families`` holds the task families, ``fixtures`` the seeded random material, ``verifier``
the check language rendered into ``tests/test.sh``, ``render`` the task-dir writer.
"""

from synthesis.procedural.families import FAMILIES, FAMILY_SERVICES, generate
from synthesis.procedural.spec import DIFFICULTIES, ProceduralTask, Step

__all__ = ["DIFFICULTIES", "FAMILIES", "FAMILY_SERVICES", "ProceduralTask", "Step", "generate"]
