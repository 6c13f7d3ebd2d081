"""Reference pools: the packaged claw pool and user pools (JSONL file or folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from synthesis.pools import PoolError, load_pool, packaged_pool, sample
from synthesis.procedural.families import FAMILIES, FAMILY_DOMAIN


def test_packaged_claw_pool_covers_every_family() -> None:
    items = packaged_pool("claw")
    assert len(items) >= 25
    assert {i.kind for i in items} >= {"skill", "use_case", "seed_instruction"}
    assert {f for f in FAMILIES if FAMILY_DOMAIN[f] == "claw"} <= {f for i in items for f in i.families}
    assert len({i.id for i in items}) == len(items)


def test_packaged_computer_use_pool_covers_its_families() -> None:
    items = packaged_pool("computer-use")
    assert {f for f in FAMILIES if FAMILY_DOMAIN[f] == "computer-use"} == {f for i in items for f in i.families}


def test_user_pool_folder_mixes_jsonl_json_and_markdown(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"id": "x1", "text": "Book travel to Oslo", "services": ["calendar"]}\n\n')
    (tmp_path / "b.json").write_text('[{"id": "x2", "kind": "skill", "text": "Summarise a web page"}]')
    (tmp_path / "c.md").write_text("A recruiter screens candidates by email.\n")
    (tmp_path / "ignored.bin").write_bytes(b"\0")
    items = load_pool(tmp_path, domain="claw")
    assert [i.id for i in items] == ["x1", "x2", "c"]
    assert items[1].kind == "skill" and items[2].text.startswith("A recruiter")
    assert sample(items, 2, seed=4) == sample(items, 2, seed=4)


def test_bad_pool_line_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "pool.jsonl"
    bad.write_text('{"id": "ok", "text": "fine"}\n{"id": "broken"}\n')
    with pytest.raises(PoolError, match=r"pool.jsonl:2"):
        load_pool(bad)
    with pytest.raises(PoolError, match="no such pool"):
        load_pool(tmp_path / "missing")
