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


def collect_task_artifacts(entries: list[str | dict], *, workspace: Path, logs_dir: Path,
                           workdir: str = "/app") -> list[str]:
    """Harbor's task-level ``artifacts`` (a path, or ``{source, destination, exclude}``; sidecar
    ``service`` entries are skipped) copied into ``<logs>/artifacts/`` after the verifier:
    each at its ``destination``, else at its source path without the leading ``/``. Sources
    are sandbox paths (``/logs/...`` and the WORKDIR are mapped to this sandbox's dirs when
    they are elsewhere here). Symlinks are copied as links. Returns the sources copied."""
    dest_root = logs_dir / ARTIFACTS_DIR
    copied: list[str] = []
    for entry in entries:
        doc = {"source": entry} if isinstance(entry, str) else dict(entry)
        if doc.get("service") not in (None, "main"):
            continue
        source = str(doc["source"])
        path = Path(source)
        if not path.exists():
            for prefix, local in (("/logs", logs_dir), (workdir.rstrip("/") or "/app", workspace)):
                if source == prefix or source.startswith(prefix + "/"):
                    path = local / source[len(prefix):].lstrip("/")
                    break
            else:
                if not path.is_absolute():
                    path = workspace / source
        if not path.exists() and not path.is_symlink():
            continue
        rel = str(doc.get("destination") or source.lstrip("/"))
        target = dest_root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        excludes = [str(x) for x in doc.get("exclude") or []]
        if path.is_dir() and not path.is_symlink():
            shutil.copytree(path, target, symlinks=True, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(*excludes) if excludes else None)
        else:
            shutil.copy2(path, target, follow_symlinks=False)
        copied.append(source)
    return copied
