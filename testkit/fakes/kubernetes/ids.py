"""Fast non-cryptographic ids for the fake (uids, event names, container ids): os.urandom
costs ~0.5 ms a call on these machines, which would dominate a 5,000-pod benchmark."""

from __future__ import annotations

import random
import uuid

_rng = random.Random()
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def new_uid() -> str:
    return str(uuid.UUID(int=_rng.getrandbits(128), version=4))


def hex_token(nbytes: int) -> str:
    return f"{_rng.getrandbits(nbytes * 8):0{nbytes * 2}x}"


def name_suffix(n: int = 5) -> str:
    """The random suffix the API server appends to ``generateName``."""
    return "".join(_rng.choice(_NAME_CHARS) for _ in range(n))
