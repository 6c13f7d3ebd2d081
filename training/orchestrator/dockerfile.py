"""A small Dockerfile reader: what the local backend can honour without building an image.

Honoured: ``FROM`` (recorded), ``WORKDIR``, ``ENV``, ``ARG`` defaults (for ``$VAR``
expansion), ``COPY``/``ADD`` of build-context files (destination made absolute against the
current WORKDIR). Ignored on purpose: ``CMD``, ``ENTRYPOINT``, ``EXPOSE``, ``LABEL``,
``STOPSIGNAL`` (the runner replaces the entrypoint). Everything else (``RUN``, ``USER``,
``COPY --from``, ``ADD`` of a URL ...) is listed in :attr:`DockerfileInfo.unhonoured`.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

_IGNORED = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "STOPSIGNAL", "MAINTAINER"}
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass
class CopyOp:
    """One COPY/ADD of build-context files: ``sources`` relative to the context."""

    sources: list[str]
    dest: str  # absolute path in the sandbox; ends with "/" when a directory is meant
    line: str


@dataclass
class DockerfileInfo:
    from_image: str | None = None
    workdir: str = "/app"
    workdir_set: bool = False
    env: dict[str, str] = field(default_factory=dict)
    copies: list[CopyOp] = field(default_factory=list)
    unhonoured: list[str] = field(default_factory=list)


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    buf = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        if buf.strip():
            lines.append(buf.strip())
        buf = ""
    if buf.strip():
        lines.append(buf.strip())
    return lines


def expand(value: str, env: dict[str, str]) -> str:
    """Expand ``$VAR``, ``${VAR}`` and ``${VAR:-default}`` against ``env``."""

    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in env and env[name] != "":
            return env[name]
        return m.group(2) or ""

    return _VAR.sub(repl, value)


def _split_args(rest: str) -> list[str]:
    if rest.startswith("["):
        try:
            parsed = json.loads(rest)
            if isinstance(parsed, list):
                return [str(x) for x in parsed]
        except json.JSONDecodeError:
            pass
    return shlex.split(rest)


def _parse_env(rest: str, env: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    parts = shlex.split(rest)
    if parts and "=" not in parts[0]:  # legacy form: ENV KEY value with spaces
        key, _, value = rest.partition(" ")
        out[key.strip()] = expand(value.strip().strip('"'), env)
        return out
    for part in parts:
        key, _, value = part.partition("=")
        out[key] = expand(value, {**env, **out})
    return out


def parse_dockerfile(path: str | Path, default_workdir: str = "/app") -> DockerfileInfo:
    """Read a Dockerfile; unknown or unsupported instructions are listed, never raised."""
    info = DockerfileInfo(workdir=default_workdir)
    text = Path(path).read_text(encoding="utf-8")
    args: dict[str, str] = {}
    n_from = 0
    for line in _logical_lines(text):
        if line.startswith("#"):
            continue
        instr, _, rest = line.partition(" ")
        instr = instr.upper()
        rest = rest.strip()
        scope = {**args, **info.env}
        if instr == "FROM":
            n_from += 1
            tokens = [t for t in rest.split() if not t.startswith("--")]
            info.from_image = expand(tokens[0], args) if tokens else None
            if n_from > 1:
                info.unhonoured.append(f"{line} (multi-stage build: only files of the last stage's context are used)")
        elif instr == "ARG":
            key, _, value = rest.partition("=")
            args.setdefault(key.strip(), expand(value.strip().strip('"'), scope))
        elif instr == "ENV":
            info.env.update(_parse_env(rest, scope))
        elif instr == "WORKDIR":
            wd = expand(rest.strip('"'), scope)
            info.workdir = posixpath.normpath(posixpath.join(info.workdir, wd))
            info.workdir_set = True
        elif instr in ("COPY", "ADD"):
            tokens = _split_args(rest)
            flags = [t for t in tokens if t.startswith("--")]
            paths = [expand(t, scope) for t in tokens if not t.startswith("--")]
            if any(f.startswith("--from") for f in flags) or len(paths) < 2:
                info.unhonoured.append(line)
                continue
            *sources, dest = paths
            if instr == "ADD" and any(
                re.match(r"^[a-z]+://", s) or s.endswith((".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.bz2")) for s in sources
            ):
                info.unhonoured.append(line)
                continue
            is_dir = dest.endswith("/") or dest in (".", "./")
            abs_dest = posixpath.normpath(posixpath.join(info.workdir, dest))
            if is_dir and not abs_dest.endswith("/"):
                abs_dest += "/"
            info.copies.append(CopyOp(sources=sources, dest=abs_dest, line=line))
        elif instr in _IGNORED:
            continue
        else:
            info.unhonoured.append(line)
    return info
