"""The ``files`` mock service: a cloud drive of text files under virtual absolute paths."""

from __future__ import annotations

import posixpath

from pydantic import Field, field_validator

from environments.claw.core import Args, ClawError, Collection, ServiceSpec, Store, joined, not_found, rank

SPEC = ServiceSpec(
    "files",
    "A cloud drive of text files: list folders, read, write, search and delete files.",
    {"files": Collection(prefix="f", defaults={"path": "", "content": ""}, required=("path",), id_key="path")},
)


def norm_path(path: str) -> str:
    path = path.strip()
    if not path:
        raise ValueError("path is empty")
    return posixpath.normpath("/" + path.lstrip("/"))


class PathArgs(Args):
    path: str = Field(description="Absolute file path, e.g. /reports/q1.txt.")

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        return norm_path(v)


class ListArgs(Args):
    dir: str = Field("/", description="Folder to list, e.g. /reports.")
    recursive: bool = Field(False, description="Also list files in sub-folders.")

    @field_validator("dir")
    @classmethod
    def _dir(cls, v: str) -> str:
        return norm_path(v)


@SPEC.action("list", ListArgs, "List files and sub-folders of a folder.")
def list_files(store: Store, a: ListArgs) -> dict:
    base = a.dir.rstrip("/") + "/"
    files, dirs = [], set()
    for f in store.items("files"):
        p = f["path"]
        if not p.startswith(base):
            continue
        rest = p[len(base):]
        if "/" in rest and not a.recursive:
            dirs.add(base + rest.split("/", 1)[0])
        else:
            files.append({"path": p, "size": len(f.get("content", ""))})
    if not files and not dirs and a.dir != "/":
        raise not_found("folder", a.dir, "list '/' to see the top-level folders")
    return {"dir": a.dir, "folders": sorted(dirs), "files": sorted(files, key=lambda x: x["path"])}


@SPEC.action("read", PathArgs, "Read a file's text.")
def read(store: Store, a: PathArgs) -> dict:
    f = store.get("files", a.path, "file")
    return {"path": f["path"], "content": f.get("content", "")}


class WriteArgs(PathArgs):
    content: str = Field(description="Full new text of the file.")
    overwrite: bool = Field(True, description="Replace the file if it exists (false: fail instead).")


@SPEC.action("write", WriteArgs, "Create or replace a text file.")
def write(store: Store, a: WriteArgs) -> dict:
    existing = store.find("files", a.path)
    if existing is not None:
        if not a.overwrite:
            raise ClawError(409, "conflict", f"{a.path} exists", "pass overwrite=true to replace it")
        store.update("files", a.path, {"content": a.content})
        return {"path": a.path, "created": False, "size": len(a.content)}
    store.insert("files", {"path": a.path, "content": a.content})
    return {"path": a.path, "created": True, "size": len(a.content)}


class SearchArgs(Args):
    query: str = Field(description="Keywords matched against file paths and contents.", min_length=1)
    limit: int = Field(20, ge=1, le=100, description="Maximum number of results.")


@SPEC.action("search", SearchArgs, "Search files by name and content.")
def search(store: Store, a: SearchArgs) -> dict:
    found = rank(a.query, store.items("files"), lambda f: joined(f, "path", "content"))
    return {
        "files": [
            {"path": f["path"], "snippet": " ".join(str(f.get("content", "")).split())[:160]}
            for f in found[: a.limit]
        ]
    }


@SPEC.action("delete", PathArgs, "Delete a file.")
def delete(store: Store, a: PathArgs) -> dict:
    return {"deleted": store.delete("files", a.path)["path"]}
