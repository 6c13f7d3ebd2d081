"""Checkpoint content hashes (openforge/hashing.py): by content, memoised beside the weights."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from openforge.hashing import MEMO_NAME, checkpoint_sha


def _checkpoint(root: Path, weights: bytes = b"\x01" * 1000) -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text('{"model_type": "llama"}')
    (root / "model.safetensors").write_bytes(weights)
    (root / "tokenizer").mkdir()
    (root / "tokenizer" / "tokenizer.json").write_text("{}")
    return root


def test_equal_weights_hash_equal_anywhere_and_a_copy_with_new_mtimes_too(tmp_path: Path) -> None:
    a = _checkpoint(tmp_path / "a")
    sha = checkpoint_sha(a)
    assert (a / MEMO_NAME).is_file()
    b = tmp_path / "elsewhere" / "b"
    shutil.copytree(a, b, copy_function=shutil.copy)  # new mtimes; the memo travels but no longer matches
    os.utime(b / "model.safetensors", ns=(1, 1))
    assert checkpoint_sha(b) == sha
    assert checkpoint_sha(_checkpoint(tmp_path / "c")) == sha


def test_any_change_of_a_file_changes_the_hash(tmp_path: Path) -> None:
    root = _checkpoint(tmp_path / "ckpt")
    sha = checkpoint_sha(root)
    (root / "model.safetensors").write_bytes(b"\x02" * 1000)  # same size, same path
    changed = checkpoint_sha(root)
    assert changed != sha
    (root / "tokenizer" / "tokenizer.json").write_text('{"added": 1}')
    assert checkpoint_sha(root) not in (sha, changed)
    (root / "extra.bin").write_bytes(b"")
    assert len({sha, changed, checkpoint_sha(root)}) == 3


def test_the_memo_answers_only_for_files_whose_size_and_mtime_it_recorded(tmp_path: Path) -> None:
    root = _checkpoint(tmp_path / "ckpt")
    sha = checkpoint_sha(root)
    weights = root / "model.safetensors"
    stat = weights.stat()
    weights.write_bytes(b"\x02" * 1000)
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    # same size and mtime: the memo's digest is reused (no re-read of gigabytes on every look-up)
    assert checkpoint_sha(root) == sha
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # any rewrite moves the mtime: read again
    assert checkpoint_sha(root) != sha
    assert checkpoint_sha(_checkpoint(tmp_path / "twin", b"\x02" * 1000)) == checkpoint_sha(root)


def test_a_read_only_checkpoint_is_hashed_without_a_memo(tmp_path: Path) -> None:
    root = _checkpoint(tmp_path / "ckpt")
    expected = checkpoint_sha(_checkpoint(tmp_path / "twin"))
    root.chmod(0o555)
    try:
        if os.access(root, os.W_OK):
            pytest.skip("running as root: chmod does not make the folder read-only")
        assert checkpoint_sha(root) == expected
        assert not (root / MEMO_NAME).exists()
    finally:
        root.chmod(0o755)


def test_a_missing_or_empty_checkpoint_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such checkpoint"):
        checkpoint_sha(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty"):
        checkpoint_sha(tmp_path / "empty")
