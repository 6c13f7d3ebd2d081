"""Parse task dirs with the real Harbor's task model; run by Harbor's own interpreter.

    <harbor venv>/bin/python -I environments/taskdir/harbor_parse.py DIR...

With ``--atif FILE...`` it validates ATIF trajectory files instead; with ``--rewards LOGS...``
it reads each ``LOGS/verifier/reward.json`` (else ``reward.txt``) with Harbor's own verifier
parsing (``{"ok": true, "rewards": {...}} | {"ok": false, "error"}``). Prints one JSON object ``{dir: {"ok": true, "config": <TaskConfig.model_dump(mode="json")>,
"valid_dir": <Task.is_valid_dir>} | {"ok": false, "error": "<first line>"}}``. Imports only
the standard library and ``harbor`` (not OpenForge: it runs outside our venv).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path


def atif(paths: list[str]) -> int:
    """``--atif FILE...``: each file validated as Harbor's ATIF ``Trajectory``."""
    from harbor.models.trajectories.trajectory import Trajectory

    out: dict[str, dict] = {}
    for arg in paths:
        try:
            doc = Trajectory.model_validate(json.loads(Path(arg).read_text(encoding="utf-8")))
            out[arg] = {"ok": True, "steps": len(doc.steps), "schema_version": doc.schema_version}
        except Exception as exc:  # noqa: BLE001 - every refusal is reported, not raised
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            out[arg] = {"ok": False, "error": " ".join(lines[:3])[:500] or type(exc).__name__}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


def rewards(paths: list[str]) -> int:
    """``--rewards LOGS...``: each logs dir (Harbor's trial dir layout: ``verifier/reward.json``
    or ``verifier/reward.txt``) read by Harbor's ``Verifier`` parsers into a ``VerifierResult``."""
    from harbor.models.trial.paths import TrialPaths
    from harbor.models.verifier.result import VerifierResult
    from harbor.verifier.verifier import Verifier

    out: dict[str, dict] = {}
    for arg in paths:
        reader = Verifier.__new__(Verifier)  # only its reward parsers are used: no task or environment
        reader.trial_paths = TrialPaths(trial_dir=Path(arg))
        try:
            if reader.trial_paths.reward_json_path.is_file():
                parsed = reader._parse_reward_json()
            else:
                parsed = reader._parse_reward_text()
            out[arg] = {"ok": True, "rewards": VerifierResult(rewards=parsed).rewards}
        except Exception as exc:  # noqa: BLE001 - every refusal is reported, not raised
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            out[arg] = {"ok": False, "error": " ".join(lines[:3])[:500] or type(exc).__name__}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


def main(argv: list[str]) -> int:
    warnings.simplefilter("ignore")  # Harbor's deprecation warnings (memory, allow_internet)
    if argv[:1] == ["--atif"]:
        return atif(argv[1:])
    if argv[:1] == ["--rewards"]:
        return rewards(argv[1:])
    from harbor.models.task.config import TaskConfig
    from harbor.models.task.task import Task

    out: dict[str, dict] = {}
    for arg in argv:
        path = Path(arg)
        try:
            config = TaskConfig.model_validate_toml((path / "task.toml").read_text(encoding="utf-8"))
            out[arg] = {"ok": True, "config": config.model_dump(mode="json"), "valid_dir": Task.is_valid_dir(path)}
        except Exception as exc:  # noqa: BLE001 - every refusal is reported, not raised
            text = str(exc)
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            out[arg] = {"ok": False, "error": " ".join(lines[:3])[:500] or type(exc).__name__}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
