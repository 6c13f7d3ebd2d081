"""Harbor's ``environment_mode = "separate"``: the agent's sandbox ends without a verifier and
hands its declared artifacts over in ``<logs>/artifacts/`` (kept by every backend); the
orchestrator then verifies them in a fresh sandbox (``training/orchestrator/separate.py``).
"""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

ARTIFACTS_DIR = "artifacts"


def hand_over_artifacts(workspace: Path, logs_dir: Path, patterns: list[str]) -> list[str]:
    """Copy the workspace paths matching ``patterns`` (all of it when empty) into
    ``<logs>/artifacts/``; symlinks are copied as links, never followed. Returns what was copied
    (workspace-relative)."""
    dest = logs_dir / ARTIFACTS_DIR
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    root = workspace.resolve()
    found: list[Path] = []
    for pattern in patterns or ["*", ".*"]:
        for match in sorted(glob.glob(str(root / pattern), recursive=True)):
            p = Path(match)
            if p.name in (".", "..") or os.path.commonpath([root, p.absolute()]) != str(root):
                continue
            found.append(p)
    copied: list[str] = []
    for p in found:
        rel = p.relative_to(root)
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if p.is_symlink() or not p.is_dir():
            shutil.copy2(p, target, follow_symlinks=False)
        else:
            shutil.copytree(p, target, symlinks=True, dirs_exist_ok=True)
        copied.append(str(rel))
    return copied
