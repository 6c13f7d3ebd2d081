"""Reference pools: the material proposers ground their instructions in.

A pool is a list of :class:`PoolItem` (a skill, a use case, or a seed instruction) with the
services it touches and, for the offline generators, the procedural families that realise
it. The claw pool ships with the package (``claw.jsonl``, written for this project); users
add their own as a JSONL file or a folder of ``.jsonl`` / ``.json`` / ``.md`` / ``.txt`` files.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

log = logging.getLogger(__name__)

PACKAGED_DIR = Path(__file__).parent


class PoolError(ValueError):
    """A pool file or line is malformed (the message names the file and line)."""


class PoolItem(BaseModel):
    id: str
    domain: str = "claw"
    kind: Literal["skill", "use_case", "seed_instruction", "asset"] = "use_case"
    text: str = Field(min_length=1)
    services: list[str] = Field(default_factory=list)
    families: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)


def _load_jsonl(path: Path, domain: str | None) -> list[PoolItem]:
    items = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            raw = json.loads(line)
            if domain and "domain" not in raw:
                raw["domain"] = domain
            items.append(PoolItem.model_validate(raw))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise PoolError(f"{path}:{lineno}: {str(exc).splitlines()[0]}") from exc
    return items


def load_pool(path: str | Path, *, domain: str | None = None) -> list[PoolItem]:
    """Items from a JSONL file, a JSON list, a text/markdown file (one item), or a folder."""
    path = Path(path)
    if not path.exists():
        raise PoolError(f"{path}: no such pool file or folder")
    if path.is_dir():
        items: list[PoolItem] = []
        for child in sorted(path.iterdir()):
            if child.suffix in {".jsonl", ".json", ".md", ".txt"}:
                items.extend(load_pool(child, domain=domain))
        return items
    if path.suffix == ".jsonl":
        return _load_jsonl(path, domain)
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            rows = data if isinstance(data, list) else data.get("items", [])
            return [PoolItem.model_validate({"domain": domain or "claw", **r}) for r in rows]
        except (json.JSONDecodeError, ValidationError, AttributeError) as exc:
            raise PoolError(f"{path}: {str(exc).splitlines()[0]}") from exc
    text = path.read_text(encoding="utf-8").strip()
    if not text:
        raise PoolError(f"{path}: empty")
    return [PoolItem(id=path.stem, domain=domain or "claw", kind="use_case", text=text)]


def packaged_pool(domain: str = "claw") -> list[PoolItem]:
    """The pool shipped with OpenForge for ``domain``."""
    path = PACKAGED_DIR / f"{domain}.jsonl"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PACKAGED_DIR.glob("*.jsonl")))
        raise PoolError(f"unknown domain {domain!r}: no packaged pool (known: {known}); "
                        "or give a pool file of your own for it")
    return _load_jsonl(path, domain)


def sample(items: list[PoolItem], k: int, seed: int) -> list[PoolItem]:
    """A deterministic sample of ``k`` items (all of them if fewer)."""
    rng = random.Random(seed)
    return rng.sample(items, k=min(k, len(items)))
