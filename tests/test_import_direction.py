"""Dependencies point one way (DESIGN §2): every import of every module, read with ``ast``
(nothing is imported, function-level and ``TYPE_CHECKING`` imports included), against the
rooms' declared direction, and no import cycle between modules.

The allowed graph is declared here, in :data:`ROOMS` (which rooms a room may import) and
:data:`ENVIRONMENTS_PARTS` (inside ``environments/``: shared modules at the bottom, the
domains above them, harnesses and the domain registry above the domains, the runner on
top — it asks the registry, never a domain). A failure names the file, the line and the
import. The checker itself is tested on small planted trees (``test_checker_*``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: room → the rooms it may import (besides itself). Bottom first: ``openforge`` (settings,
#: presets) and ``storage``; then ``environments``; ``training`` and ``synthesis`` side by
#: side, never importing each other; ``tasks`` → ``flows`` → ``cli`` on top. ``testkit``
#: (fakes, tiny tasks and models shared by tests and benches) drives the product and is
#: imported by no product room; ``bench`` may use all of it but never ``tests``. ``tests``
#: may import anything and is not checked.
ROOMS: dict[str, frozenset[str]] = {
    "openforge": frozenset(),
    "storage": frozenset({"openforge"}),
    "environments": frozenset({"storage", "openforge"}),
    "training": frozenset({"environments", "storage", "openforge"}),
    "synthesis": frozenset({"environments", "storage", "openforge"}),
    "tasks": frozenset({"synthesis", "training", "environments", "storage", "openforge"}),
    "flows": frozenset({"tasks", "synthesis", "training", "environments", "storage", "openforge"}),
    "cli": frozenset({"flows", "tasks", "synthesis", "training", "environments", "storage", "openforge"}),
    "testkit": frozenset({"synthesis", "training", "environments", "storage", "openforge"}),
    "bench": frozenset({"testkit", "cli", "flows", "tasks", "synthesis", "training", "environments", "storage",
                        "openforge"}),
}
#: Problems known and owned elsewhere (problem's start → why it stands, who removes it). Each
#: must still occur: an entry whose problem is gone fails the test, so the list only shrinks.
KNOWN: dict[str, str] = {}
#: Top-level folders that are not rooms of the product (never scanned).
NOT_ROOMS = frozenset({"tests", "docs", "configs", "scripts"})

#: Inside ``environments/``: part → the parts it may import (besides itself).
ENVIRONMENTS_PARTS: dict[str, frozenset[str]] = {
    "shared": frozenset(),
    "domains": frozenset({"shared"}),
    "harnesses": frozenset({"shared", "domains"}),
    "registry": frozenset({"shared", "domains"}),
    "runner": frozenset({"shared", "harnesses", "registry"}),
}
#: ``environments.<name>`` → its part; any other module or package (``records``, ``taskdir``,
#: ``procs``, ``service_group``, ``verifiers``, ``gui``, ``bank``, ...) is ``shared``: the
#: bottom, which may import nothing above it.
ENVIRONMENTS_MEMBERS: dict[str, str] = {
    "claw": "domains", "browser": "domains", "computer": "domains",
    "harnesses": "harnesses",
    "domain_registry": "registry", "serve": "registry",
    "runner": "runner",
}


@dataclass(frozen=True)
class Import:
    """One import statement's target, as written in ``path`` at ``line``."""

    module: str  # the importing module (dotted)
    path: Path
    line: int
    target: str  # the imported module (dotted; ``from a import b`` → ``a.b`` when that is a module)

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}: imports {self.target}"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def python_files(root: Path, rooms: Mapping[str, object]) -> Iterator[Path]:
    """Every ``.py`` file of every top-level folder of ``root`` that holds Python, except
    hidden ones and :data:`NOT_ROOMS`; raises on a folder that is not a declared room."""
    for top in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if top.name in NOT_ROOMS or top.name.endswith(".egg-info"):
            continue
        files = sorted(f for f in top.rglob("*.py") if "__pycache__" not in f.parts)
        if files and top.name not in rooms:
            raise AssertionError(f"{top.name}/ holds Python but is no declared room: add it to ROOMS")
        yield from files


def read_imports(root: Path, rooms: Mapping[str, object]) -> list[Import]:
    """The absolute imports of our own rooms (and ``tests``) in every scanned module."""
    files = list(python_files(root, rooms))
    modules = {_module_name(f, root) for f in files}
    ours = set(rooms) | {"tests"}
    found: list[Import] = []
    for path in files:
        module = _module_name(path, root)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolve against the importing package
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in dict.fromkeys(targets):
                if target.split(".")[0] in ours:
                    found.append(Import(module, path, node.lineno, target))
    return found


def room_violations(imports: list[Import], rooms: Mapping[str, frozenset[str]], root: Path) -> list[str]:
    """Imports from one room into another that the room may not import."""
    out = []
    for imp in imports:
        src, dst = imp.module.split(".")[0], imp.target.split(".")[0]
        if src != dst and dst not in rooms.get(src, frozenset()):
            out.append(f"{imp.where(root)} ({src} may import only {', '.join(sorted(rooms[src])) or 'nothing'})")
    return out


def environments_part(module: str) -> str:
    """The part of ``environments`` a module belongs to (undeclared: ``shared``)."""
    name = module.split(".")[1] if module.count(".") else ""
    return ENVIRONMENTS_MEMBERS.get(name, "shared")


def environments_violations(imports: list[Import], root: Path) -> list[str]:
    """Imports inside ``environments/`` against :data:`ENVIRONMENTS_PARTS`."""
    out = []
    for imp in imports:
        if imp.module.split(".")[0] != "environments" or imp.target.split(".")[0] != "environments":
            continue
        src, dst = environments_part(imp.module), environments_part(imp.target)
        if src != dst and dst not in ENVIRONMENTS_PARTS[src]:
            out.append(f"{imp.where(root)} (environments: {src} may import only "
                       f"{', '.join(sorted(ENVIRONMENTS_PARTS[src])) or 'its own part'})")
    return out


def import_cycles(imports: list[Import], root: Path) -> list[str]:
    """Every cycle of the module import graph (strongly connected components, Tarjan), each
    with the imports that close it."""
    graph: dict[str, dict[str, Import]] = {}
    for imp in imports:
        graph.setdefault(imp.module, {}).setdefault(imp.target, imp)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:  # recursive Tarjan: our graph is a few hundred modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, {}):
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    out = []
    for component in components:
        members = set(component)
        edges = [imp.where(root) for m in component for t, imp in graph.get(m, {}).items() if t in members]
        out.append(f"cycle {' <-> '.join(component)}: " + "; ".join(sorted(edges)))
    return out


def check(root: Path, rooms: Mapping[str, frozenset[str]]) -> list[str]:
    """Every problem of the tree at ``root``: room direction, environments' parts, cycles."""
    imports = read_imports(root, rooms)
    product = [imp for imp in imports if imp.target.split(".")[0] != "tests" or imp.module.split(".")[0] in rooms]
    return [*room_violations(product, rooms, root), *environments_violations(imports, root),
            *import_cycles([imp for imp in imports if imp.target.split(".")[0] in rooms], root)]


# -- the real tree --------------------------------------------------------------------------
def test_every_import_follows_the_rooms_direction_and_closes_no_cycle() -> None:
    problems = check(ROOT, ROOMS)
    new = [p for p in problems if not p.startswith(tuple(KNOWN))]
    assert not new, "imports against the rooms' direction or in a cycle:\n" + "\n".join(new)
    gone = [k for k in KNOWN if not any(p.startswith(k) for p in problems)]
    assert not gone, f"fixed, so remove from KNOWN: {gone}"


# -- the checker, on planted trees ----------------------------------------------------------
def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


CLEAN = {
    "openforge/__init__.py": "",
    "storage/__init__.py": "", "storage/db.py": "from openforge import settings\n",
    "openforge/settings.py": "",
    "environments/__init__.py": "",
    "environments/records.py": "",
    "environments/procs.py": "",
    "environments/domain_registry.py": "from environments.claw import domain\n",
    "environments/claw/__init__.py": "", "environments/claw/domain.py": "from environments import records\n",
    "environments/runner/__init__.py": "",
    "environments/runner/rollout.py": "from environments.domain_registry import DOMAINS\nfrom . import jail\n",
    "environments/runner/jail.py": "from environments.procs import spawn\n",
    "training/__init__.py": "", "training/loop.py": "from environments.records import RolloutSpec\n",
    "bench/b.py": "import training.loop\n",
    "tests/__init__.py": "", "tests/fakes.py": "import bench\n",
}


def test_checker_passes_a_clean_tree(tmp_path: Path) -> None:
    assert check(_tree(tmp_path, CLEAN), ROOMS) == []


@pytest.mark.parametrize(("rel", "text", "expected"), [
    ("environments/claw/process.py", "def f():\n    from training.loop import run\n",
     "environments/claw/process.py:2: imports training.loop (environments may import only openforge, storage)"),
    ("bench/k8s.py", "from tests.fakes import FakeKubeAPI\n", "bench/k8s.py:1: imports tests.fakes (bench may"),
    ("training/x.py", "import flows\n", "training/x.py:1: imports flows (training may"),
    ("storage/models.py", "from environments import records\n", "storage/models.py:1: imports environments"),
    ("environments/claw/desktop.py", "from environments.runner.jail import Jail\n",
     "environments/claw/desktop.py:1: imports environments.runner.jail (environments: domains may import only shared)"),
    ("environments/runner/skills.py", "from environments.claw.domain import DOMAIN\n",
     "environments/runner/skills.py:1: imports environments.claw.domain (environments: runner may import only"),
    ("environments/procs.py", "from .claw import domain\n", "environments/procs.py:1: imports environments.claw.domain"),
])
def test_checker_names_a_planted_violation(tmp_path: Path, rel: str, text: str, expected: str) -> None:
    files = {**CLEAN, rel: text}
    problems = check(_tree(tmp_path, files), ROOMS)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_checker_names_both_imports_of_a_cycle(tmp_path: Path) -> None:
    files = {**CLEAN, "environments/claw/families.py": "def f():\n    from environments.claw.taskgen import g\n",
             "environments/claw/taskgen.py": "from environments.claw.families import Task\n"}
    (problem,) = check(_tree(tmp_path, files), ROOMS)
    assert problem.startswith("cycle environments.claw.families <-> environments.claw.taskgen: ")
    assert "environments/claw/families.py:2: imports environments.claw.taskgen" in problem
    assert "environments/claw/taskgen.py:1: imports environments.claw.families" in problem


def test_checker_refuses_an_undeclared_room(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="cli2/ holds Python but is no declared room"):
        check(_tree(tmp_path, {**CLEAN, "cli2/main.py": ""}), ROOMS)


def test_an_undeclared_environments_module_is_shared(tmp_path: Path) -> None:
    files = {**CLEAN, "environments/newthing.py": "from environments import records\nimport environments.claw\n"}
    assert check(_tree(tmp_path, files), ROOMS) == [
        "environments/newthing.py:2: imports environments.claw (environments: shared may import only its own part)"]
