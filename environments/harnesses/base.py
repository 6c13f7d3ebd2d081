"""The harness adapter protocol: what a harness needs to know about a rollout
(:class:`HarnessContext`) and how an adapter turns that into a process to launch
(:class:`Harness` → :class:`LaunchPlan`).

An adapter is small and declarative: an install hint, the config files to write, the
command line and the environment. The runner (environments/runner) launches the plan,
enforces the agent timeout and classifies the exit.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.domain import prepend_path, skill_bin_dirs
from environments.harnesses.binaries import find_binary

log = logging.getLogger(__name__)

#: A harness may write this JSON file into its log dir to report a model-caused failure:
#: ``{"status": "policy_error"|"infra_error", "error_kind": "...", "error": "..."}``.
OUTCOME_FILE = "openforge-outcome.json"

def write_outcome(log_dir: Path, status: str, error_kind: str | None, error: str | None) -> int:
    """End of an in-process harness's ``main``: write :data:`OUTCOME_FILE` when the episode
    ended in ``policy_error``/``infra_error``; the process exit code (1 for ``infra_error``)."""
    if status in ("policy_error", "infra_error"):
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / OUTCOME_FILE).write_text(json.dumps(
            {"status": status, "error_kind": error_kind, "error": error}), encoding="utf-8")
    return 1 if status == "infra_error" else 0


#: A harness whose episode ends with a final text reply writes it to this file in its log
#: dir (``<logs>/agent/final_answer.txt``), so a verifier can grade question-answer tasks.
#: A third-party harness that cannot write it declares where its reply lands instead
#: (:meth:`Harness.final_reply`); the runner copies it here after the harness exits.
FINAL_ANSWER_FILE = "final_answer.txt"

#: Largest harness log file :func:`read_log_text` reads (a trajectory JSON, a last-message file).
MAX_LOG_READ = 32 * 1024 * 1024

#: The harness's stdout and stderr together, as the runner captures them in its log dir
#: (``<logs>/agent/harness.log``, environments/runner/rollout.py); every step of a multi-step
#: task appends to it. A harness that prints its final reply reads it from here.
AGENT_LOG_FILE = "harness.log"

#: Env var holding the base URL of the task's mock services (claw family), if any.
SERVICES_URL_ENV = "CLAW_URL"


class HarnessMissing(RuntimeError):
    """The harness binary (or script) is not installed here: an infra error, not the model's."""


class HarnessConfigError(ValueError):
    """The harness options are unusable (e.g. ``command`` without a template)."""


@dataclass
class HarnessContext:
    """Everything an adapter may use to configure one rollout."""

    instruction: str
    task_dir: Path
    workspace: Path
    logs_dir: Path  # this harness's log dir (``<logs>/agent``)
    home: Path  # scratch HOME for the harness's own state (config dirs, caches)
    base_url: str | None = None  # proxy base URL, ends in /v1
    token: str | None = None
    model: str = "policy"
    options: dict[str, Any] = field(default_factory=dict)
    solution_dir: Path | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    services_url: str | None = None
    skills: dict[str, str] = field(default_factory=dict)  # skill name -> SKILL.md text
    env: dict[str, str] = field(default_factory=dict)  # sandbox env the runner exports
    # Bytes of the agent log (AGENT_LOG_FILE) already there when Harness.plan ran: an earlier
    # step's output, which this step's final reply must not be read from.
    agent_log_start: int = 0

    @property
    def api_key(self) -> str:
        """The credential a harness sends: the rollout token (never a real API key)."""
        return self.token or "openforge-no-token"

    @property
    def base_url_or_default(self) -> str:
        return (self.base_url or "http://127.0.0.1:9/v1").rstrip("/")

    @property
    def anthropic_base_url(self) -> str:
        """Anthropic clients append ``/v1/messages`` themselves: the base URL minus ``/v1``."""
        url = self.base_url_or_default
        return url.removesuffix("/v1")

    def prompt(self, skills_location: str | None = None) -> str:
        """The instruction, plus a pointer to the tool skills when the harness reads them."""
        if not self.skills or skills_location is None:
            return self.instruction
        names = ", ".join(sorted(self.skills))
        return (
            f"{self.instruction.rstrip()}\n\n"
            f"Tools for this task ({names}) are HTTP services you call from the shell; "
            f"read the SKILL.md files under {skills_location} to learn how."
        )


@dataclass
class LaunchPlan:
    """A process to start: argv, extra env, cwd and the files written before it starts."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    files: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class Harness:
    """Base adapter: subclasses override :meth:`command`, and optionally :meth:`files`,
    :meth:`env`, :meth:`skills_dir` (where SKILL.md files go; None = harness has native tools)."""

    name: str
    description: str = ""
    install_hint: str = ""
    binary: str | None = None  # key for binaries.find_binary, checked before launch
    uses_model: bool = True
    tested: bool = True

    # -- declarative parts -------------------------------------------------------------
    def files(self, ctx: HarnessContext) -> dict[Path, str]:
        """Config files to write (absolute path → text) before the harness starts."""
        return {}

    def command(self, ctx: HarnessContext) -> list[str]:
        raise NotImplementedError

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        return {}

    def skills_dir(self, ctx: HarnessContext) -> Path | None:
        """Where this harness looks for SKILL.md folders, or None if it registers tools itself."""
        return None

    def final_reply(self, ctx: HarnessContext) -> str | None:
        """The episode's final reply, found in what the harness left (its log dir) after it
        exited; the runner writes it to :data:`FINAL_ANSWER_FILE`. None: the harness wrote
        that file itself (``react``), or its episode delivered no reply."""
        return None

    # -- shared machinery --------------------------------------------------------------
    def resolve_binary(self) -> Path:
        if self.binary is None:
            raise HarnessMissing(f"harness {self.name!r} names no binary")
        found = find_binary(self.binary)
        if found is None:
            hint = f" ({self.install_hint})" if self.install_hint else ""
            raise HarnessMissing(f"harness {self.name!r}: binary {self.binary!r} not found{hint}")
        return found

    def plan(self, ctx: HarnessContext) -> LaunchPlan:
        """Write config + skill files and return the process to launch (and note where this
        run's output will start in the agent log: ``ctx.agent_log_start``). The folders of the
        commands the skills name (``environments/<domain>/bin``: ``claw-call``) come first on
        its PATH (:func:`environments.domain.skill_bin_dirs`), also in its login shells
        (:func:`write_login_profile`)."""
        ctx.agent_log_start = _regular_file_size(ctx.logs_dir / AGENT_LOG_FILE)
        written: list[Path] = []
        skills_at = self.skills_dir(ctx)
        if skills_at is not None:
            written += write_skills(skills_at, ctx.skills)
        for path, text in self.files(ctx).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
        argv = self.command(ctx)
        env = {"HOME": str(ctx.home), **ctx.env, **self.env(ctx)}
        bins = skill_bin_dirs(ctx.skills)
        if bins:  # the commands the skills name (claw-call) resolve whatever the shell tool strips
            env["PATH"] = prepend_path(bins, env.get("PATH") or os.environ.get("PATH"))
            written += write_login_profile(Path(env.get("HOME") or ctx.home), ctx.home, bins)
        return LaunchPlan(argv=argv, env=env, cwd=ctx.workspace, files=written)


#: What :func:`write_login_profile` writes: the dirs first on PATH, each once (POSIX sh).
_PROFILE = """# OpenForge: the commands this task's SKILL.md files name (claw-call) for login shells,
# whose /etc/profile resets PATH (Codex runs its commands with bash -lc).
for _openforge_dir in {dirs}; do
  case ":$PATH:" in *":$_openforge_dir:"*) ;; *) PATH="$_openforge_dir:$PATH" ;; esac
done
unset _openforge_dir
export PATH
"""


def write_login_profile(home: Path, scratch: Path, dirs: list[Path]) -> list[Path]:
    """``home/.profile`` putting ``dirs`` first on PATH: a login shell (``bash -lc``, ``sh -l``)
    resets PATH in /etc/profile and then reads it, so a harness whose shell tool is one (Codex)
    still finds the skills' commands. Written only into the rollout's scratch HOME (``home`` is
    ``scratch`` or under it) and only when the harness brought no ``.profile`` of its own."""
    home = home.resolve()
    scratch = scratch.resolve()
    profile = home / ".profile"
    if not dirs or (home != scratch and scratch not in home.parents) or profile.exists() or profile.is_symlink():
        return []
    home.mkdir(parents=True, exist_ok=True)
    profile.write_text(_PROFILE.format(dirs=" ".join(shlex.quote(str(d)) for d in dirs)), encoding="utf-8")
    return [profile]


def _regular_file_size(path: Path) -> int:
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def read_log_text(path: Path, limit: int = MAX_LOG_READ, start: int = 0) -> str | None:
    """Text of a file the harness wrote (from byte ``start`` on), read without following a
    symlink (the runner may be more privileged than the agent that planted it); None when
    absent, not a regular file or longer than ``limit`` from ``start``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size - start > limit:
            return None
        if start:
            fh.seek(start)
        return fh.read(limit + 1)[:limit].decode("utf-8", errors="replace")


def last_json_value(text: str, accept: Callable[[Any], bool]) -> Any | None:
    """The last JSON value in a log that ``accept`` takes, among the values that begin a line
    (after blanks): how a CLI prints its result object after its log lines. Other lines (ANSI-
    coloured log lines, progress), values ``accept`` rejects and a value cut off mid-print (it
    does not decode) are skipped; None when no line holds one. Decoded by ``json.JSONDecoder.
    raw_decode``, so whatever follows the value on its line or after it does not matter."""
    decoder = json.JSONDecoder()
    end = len(text)
    while True:
        newline = text.rfind("\n", 0, end)
        at = newline + 1
        while at < end and text[at] in " \t\r":
            at += 1
        if at < end and text[at] in "{[":
            try:
                value, _ = decoder.raw_decode(text, at)
            except (ValueError, RecursionError):
                pass
            else:
                if accept(value):
                    return value
        if newline < 0:
            return None
        end = newline


def read_agent_log(ctx: HarnessContext) -> str | None:
    """This run's part of the agent log (see :data:`AGENT_LOG_FILE`), read as
    :func:`read_log_text` reads (no symlinks, size-capped); None when unreadable."""
    return read_log_text(ctx.logs_dir / AGENT_LOG_FILE, start=ctx.agent_log_start)


def deliver_final_reply(harness: Harness, ctx: HarnessContext) -> bool:
    """Post-run step: write ``harness.final_reply(ctx)`` to ``<logs>/agent/final_answer.txt``
    (replacing whatever is there, never through a symlink). False when the harness declares
    no reply (the file, if the harness wrote one, is left as it is)."""
    try:
        reply = harness.final_reply(ctx)
    except (OSError, ValueError) as exc:  # an unreadable or malformed trajectory: no reply
        log.warning("harness %s: final reply not read: %s", harness.name, exc)
        return False
    if reply is None:
        return False
    path = ctx.logs_dir / FINAL_ANSWER_FILE
    try:
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(reply)
    except OSError as exc:
        log.warning("harness %s: final reply not written to %s: %s", harness.name, path, exc)
        return False
    return True


def write_skills(root: Path, skills: dict[str, str]) -> list[Path]:
    """Write one ``<root>/<name>/SKILL.md`` per skill; returns the paths written."""
    out: list[Path] = []
    for name, text in skills.items():
        path = root / name / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        out.append(path)
    return out


def load_tools_file(path: Path) -> list[dict[str, Any]]:
    """Tool entries of a task's tools.json (a list, or ``{"tools": [...]}``); [] when absent."""
    if not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    tools = data.get("tools", []) if isinstance(data, dict) else data
    return [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]


def python_executable() -> str:
    """The interpreter running the runner (has the ``environments`` package importable)."""
    return sys.executable or "python3"


def package_root() -> Path:
    """The directory holding the ``environments`` package (for PYTHONPATH of children)."""
    return Path(__file__).resolve().parents[2]


def pythonpath_with_package() -> str:
    parts = [str(package_root())]
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(parts)


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
