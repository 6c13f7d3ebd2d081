"""Harbor's ``[agent] user`` / ``[verifier] user`` inside the sandbox: a name or uid, as
``docker exec --user`` takes it (``user``, ``uid``, ``user:group``, ``uid:gid``), looked up in
the sandbox image's own ``/etc/passwd`` and ``/etc/group`` (the runner runs in the image, so
these are the image's files, not the host's)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PASSWD = Path("/etc/passwd")
GROUP = Path("/etc/group")


class UserError(ValueError):
    """A user the sandbox does not have (one line naming the field and the value)."""


@dataclass(frozen=True)
class SandboxUser:
    uid: int
    gid: int
    name: str | None = None


def _table(path: Path) -> list[list[str]]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [ln.split(":") for ln in lines if ln and not ln.startswith("#") and ln.count(":") >= 3]


def _group_id(value: str, where: str, full: str, group: Path) -> int:
    if value.isdigit():
        return int(value)
    for row in _table(group):
        if row[0] == value and row[2].isdigit():
            return int(row[2])
    raise UserError(f"{where} = {full!r}: no such group in the sandbox ({group})")


def resolve_user(value: str | int, where: str, *, passwd: Path | None = None, group: Path | None = None) -> SandboxUser:
    """``value`` as a uid/gid pair (``where`` names the field in errors, e.g. ``[agent] user``).
    A bare uid missing from passwd runs with gid = uid (docker's behaviour is gid 0; a
    private group keeps the agent's files out of root's group)."""
    passwd, group = passwd or PASSWD, group or GROUP
    text = str(value).strip()
    name_part, _, group_part = text.partition(":")
    if not name_part:
        raise UserError(f"{where} = {value!r}: empty user")
    rows = _table(passwd)
    entry = next((r for r in rows if (r[0] == name_part if not name_part.isdigit() else r[2] == name_part)), None)
    if entry is None and not name_part.isdigit():
        raise UserError(f"{where} = {value!r}: no such user in the sandbox ({passwd})")
    if entry is not None and not (entry[2].isdigit() and entry[3].isdigit()):
        raise UserError(f"{where} = {value!r}: malformed {passwd} entry for {entry[0]!r}")
    uid = int(entry[2]) if entry is not None else int(name_part)
    gid = int(entry[3]) if entry is not None else uid
    if group_part:
        gid = _group_id(group_part, where, text, group)
    return SandboxUser(uid=uid, gid=gid, name=entry[0] if entry is not None else None)
