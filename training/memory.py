"""Giving freed memory back to the operating system.

glibc keeps freed blocks in its malloc arenas (one per thread that allocated them) instead of
returning them, so a process that trains beside engines — activations of a GRPO step, an
evaluation engine's KV caches — grew by GBs per stage and the 2-core main job was killed at
24 GB. :func:`release_freed_memory` runs ``malloc_trim(0)`` (every arena) after such work.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any


@functools.cache
def _libc() -> Any:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


def release_freed_memory() -> None:
    """Return the freed memory of every malloc arena to the OS; a no-op off glibc."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
