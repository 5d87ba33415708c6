"""The tree as docs/architecture.md draws it: no import circle among harness's modules (imports
for type checkers included), at most 25 modules at the root of harness/, and every module path
and every ``harness.x.y`` name the docs mention exists."""
from __future__ import annotations

import ast
import importlib
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "harness"
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])


def modules() -> dict[str, pathlib.Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = f
    return out


def module_imports(tree: ast.Module, known: dict[str, pathlib.Path]) -> set[str]:
    """The harness modules a module imports at its top level (inside ``if TYPE_CHECKING:`` and
    ``try:`` too; imports inside functions are deferred on purpose and not counted)."""
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for n in body:
            if isinstance(n, ast.Import):
                out.update(a.name for a in n.names if a.name in known)
            elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module in known:
                subs = {f"{n.module}.{a.name}" for a in n.names} & known.keys()
                out.update(subs)
                if len(subs) < len(n.names):
                    out.add(n.module)
            elif isinstance(n, ast.If):
                visit(n.body), visit(n.orelse)
            elif isinstance(n, ast.Try):
                visit(n.body)
    visit(tree.body)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_among_harness_modules() -> None:
    known = modules()
    graph = {m: module_imports(ast.parse(f.read_text()), known) - {m} for m, f in known.items()}
    assert cycles(graph) == []
    graph["harness.judging.verdicts"].add("harness.judging.claims")     # the circle issue 58 removed
    assert cycles(graph) == [["harness.judging.claims", "harness.judging.verdicts"]]


def test_the_root_of_harness_stays_small() -> None:
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= 25, f"{len(root)} modules at harness/'s root: put new ones in a package ({root})"


def test_every_module_path_in_the_docs_exists() -> None:
    missing = []
    for doc in DOCS:
        for path in re.findall(r"\bharness/[\w/]+\.(?:py|c|json|yaml)\b", doc.read_text()):
            if not (ROOT / path).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
    assert not missing, missing


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


# dotted names that are no Python names: the plugins' entry-point group, a logger's prefix
NOT_MODULES = {"harness.plugins", "harness.mllog"}


def test_every_harness_name_in_the_docs_resolves() -> None:
    missing = []
    for doc in [*DOCS, *PACKAGE.rglob("*.py")]:
        for name in set(re.findall(r"(?<![\w./-])harness(?:\.[A-Za-z_]\w*)+", doc.read_text())):
            if name not in NOT_MODULES and not _resolves(name):
                missing.append(f"{doc.relative_to(ROOT)}: {name}")
    assert not missing, missing


def test_no_verb_imports_another() -> None:
    """Each verb's module (one that registers a subcommand) stands alone: what verbs share lives in
    commands/options.py, commands/running.py, commands/common.py and the packages below them."""
    known = modules()
    verbs = {m for m, f in known.items() if m.startswith("harness.commands.") and "def register(" in f.read_text()}
    assert {"harness.commands.run", "harness.commands.check", "harness.commands.capture"} <= verbs
    crossing = {m: sorted(module_imports(ast.parse(known[m].read_text()), known) & (verbs - {m})) for m in verbs}
    assert not {m: i for m, i in crossing.items() if i}, crossing
