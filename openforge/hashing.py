"""Content hashes of files and checkpoint folders, for cache keys that survive copies.

A checkpoint's hash is the sha256 of its files' paths and contents (weights, config,
tokenizer: everything a load reads), so the same weights hash equal on any machine and under
any path, and different weights never collide because they share a path or a size.

Hashing gigabytes of weights on every look-up would be slow, so the per-file digests are
memoised in a sidecar, :data:`MEMO_NAME`, written beside the weights the first time. The memo
is trusted only for files whose size and ``st_mtime_ns`` are still the ones it recorded; any
other file (new, rewritten, copied to another machine without its mtime) is hashed again.
The key is always a content hash: size + mtime only decide whether a digest computed earlier
is reused, never what the digest is. A folder that cannot be written (a read-only model
store) is hashed in full each time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

#: Written beside the weights; never part of the hash.
MEMO_NAME = "openforge-sha256.json"
#: OpenForge's own bookkeeping files in a model folder (this memo, the model store's manifest):
#: metadata about the weights, not weights, so they are left out of the hash.
_BOOKKEEPING_PREFIX = "openforge-"
_MEMO_VERSION = 1


def file_sha256(path: str | Path, chunk: int = 1 << 22) -> str:
    """sha256 of one file's bytes."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _weight_files(root: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        files.extend(Path(dirpath) / name for name in sorted(filenames)
                     if not name.startswith((".", _BOOKKEEPING_PREFIX)))
    return files


def _read_memo(root: Path) -> dict[str, list]:
    try:
        memo = json.loads((root / MEMO_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(memo, dict) or memo.get("version") != _MEMO_VERSION or not isinstance(memo.get("files"), dict):
        return {}
    return memo["files"]


def _write_memo(root: Path, files: dict[str, list]) -> None:
    tmp = root / f".{MEMO_NAME}.{uuid.uuid4().hex}.tmp"  # concurrent hashers never share one
    try:
        tmp.write_text(json.dumps({"version": _MEMO_VERSION, "files": files}, sort_keys=True), encoding="utf-8")
        os.replace(tmp, root / MEMO_NAME)
    except OSError as exc:  # read-only model folder: hash in full next time
        log.info("checkpoint hash memo not written in %s: %s", root, exc)
        tmp.unlink(missing_ok=True)


def checkpoint_sha(path: str | Path) -> str:
    """Content hash of a checkpoint folder (or of a single weights file).

    Raises ``FileNotFoundError`` when ``path`` does not exist or holds no file."""
    root = Path(path)
    if root.is_file():
        return file_sha256(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such checkpoint")
    memo = _read_memo(root)
    current: dict[str, list] = {}
    for file in _weight_files(root):
        rel = file.relative_to(root).as_posix()
        stat = file.stat()
        known = memo.get(rel)
        if isinstance(known, list) and len(known) == 3 and known[:2] == [stat.st_size, stat.st_mtime_ns]:
            current[rel] = known
        else:
            current[rel] = [stat.st_size, stat.st_mtime_ns, file_sha256(file)]
    if not current:
        raise FileNotFoundError(f"{root}: an empty checkpoint folder")
    if current != memo:
        _write_memo(root, current)
    digest = hashlib.sha256()
    for rel, (_size, _mtime, sha) in sorted(current.items()):
        digest.update(f"{rel}\0{sha}\n".encode())
    return digest.hexdigest()
