"""The architecture's rules, measured on the source tree (docs/architecture.md says why each holds).

Run ``python tests/test_architecture.py`` for the measurements themselves; pytest checks the rules:

* no import cycle among the packages' modules, counting ``TYPE_CHECKING`` and function-level imports;
* only the facade's users (the CLI, the server, the tools, the adapters' helpers) import
  ``shared_core.store``; services take the kernel;
* SQL statements only in ``db/``, ``index/`` and repository modules; no backend-name comparison
  outside ``db/`` and ``index/``; the memory's lock only in the kernel, ``db/`` and ``index/``;
* the adapters use the core's public modules only: no ``shared_core.db``, no private names;
* modules of at most 600 lines, a ``MemoryStore`` of at most 35 public members.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("shared_core", "langchain_openkoi", "llama_index_openkoi")
pytestmark = pytest.mark.backend_free
ADAPTERS = ("langchain_openkoi", "llama_index_openkoi")
MAX_LINES = 600
MAX_STORE_MEMBERS = 35

#: modules that work on the facade users open (``MemoryStore``) rather than inside it
FACADE_USERS = ("shared_core.cli", "shared_core.server", "shared_core.demo", "shared_core.tools",
                "shared_core.portability", "shared_core.companions", "shared_core.item_search",
                "shared_core.relevance")
#: where SQL may be written: the backends, the indexes and each domain's repository
SQL_HOMES = ("shared_core.db", "shared_core.index")
#: where the memory's lock may be taken directly (everything else uses ``kernel.session()``)
LOCK_HOMES = ("shared_core.kernel", "shared_core.db", "shared_core.index")

_SQL = re.compile(r"""(?:^|[^\w])(?:f|rf|fr|r)?["']{1,3}\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|"""
                  r"""BEGIN|WITH|VACUUM|ANALYZE)\s""")
_DIALECT = re.compile(r"""\bdialect\s*(?:==|!=|\bin\b)|(?:==|!=)\s*["'](?:sqlite|postgresql)["']""")


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@cache
def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(modules()[module].read_text(encoding="utf-8"))


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The project modules an import statement loads (``from .x import y`` loads x, and x.y if a module)."""
    known = modules()
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".")
            if modules()[module].name != "__init__.py":
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            target = ".".join([*base, *([node.module] if node.module else [])])
        else:
            target = node.module or ""
        names = [f"{target}.{alias.name}" for alias in node.names]
        if node.module:
            names.insert(0, target)
    for name in names:
        while name and name not in known:  # ``import a.b.c`` loads a.b.c; a name imported from a module is the module
            name = name.rpartition(".")[0]
        if name:
            yield name


@cache
def import_graph() -> dict[str, frozenset[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for module in modules():
        for node in ast.walk(_tree(module)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                # a module's own packages are loaded before it, whatever it imports: not an edge
                graph[module].update(t for t in _imported(module, node) if not _within(module, (t,)))
    return {m: frozenset(graph[m]) for m in modules()}


def import_cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10_000))
    try:
        for module in sorted(graph):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(old)
    return cycles


def _is_repository(module: str) -> bool:
    return module.rpartition(".")[2] in ("repository", "repositories") or module.endswith("_repository")


def _strings(module: str) -> Iterator[tuple[int, str]]:
    """(line, text) of the module's string constants and f-string pieces, docstrings left out."""
    tree = _tree(module)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


_STATEMENT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|BEGIN|WITH|VACUUM|ANALYZE)\b"
                        r"(?=\s+(?:[\w(*\"']|$))")
_STATEMENT_SHAPE = re.compile(r"\b(FROM|INTO|SET|TABLE|INDEX|VALUES|WHERE|\w+\(|TRANSACTION|IMMEDIATE)\b|^\s*\w+\s*$")


def sql_sites() -> dict[str, list[int]]:
    """Lines of string constants that start a SQL statement, per module outside the SQL homes."""
    out: dict[str, list[int]] = {}
    for module in modules():
        if not module.startswith("shared_core") or _within(module, SQL_HOMES) or _is_repository(module):
            continue
        lines = sorted({line for line, text in _strings(module)
                        if _STATEMENT.match(text) and text.strip().isascii() and _STATEMENT_SHAPE.search(text)
                        and text.lstrip()[:6].isupper()})
        if lines:
            out[module] = lines
    return out


def _source_lines(module: str, pattern: re.Pattern[str]) -> list[int]:
    return [n for n, line in enumerate(modules()[module].read_text(encoding="utf-8").splitlines(), 1)
            if pattern.search(line.split("#", 1)[0])]


def dialect_sites() -> dict[str, list[int]]:
    return {m: lines for m in modules() if not _within(m, SQL_HOMES) and (lines := _source_lines(m, _DIALECT))}


def lock_sites() -> dict[str, list[int]]:
    pattern = re.compile(r"\b(?:db|_db|backend)\.lock\b")
    return {m: lines for m in modules()
            if not _within(m, LOCK_HOMES) and not _is_repository(m) and (lines := _source_lines(m, pattern))}


def store_importers() -> list[str]:
    return sorted(m for m, targets in import_graph().items()
                  if "shared_core.store" in targets and m not in ("shared_core", "shared_core.store")
                  and not _within(m, FACADE_USERS) and not _within(m, ADAPTERS))


def adapter_reaches() -> dict[str, list[str]]:
    """What each adapter module takes from the core that is not public: ``shared_core.db`` or a private name."""
    out: dict[str, list[str]] = defaultdict(list)
    for module in modules():
        if not _within(module, ADAPTERS):
            continue
        for node in ast.walk(_tree(module)):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("shared_core"):
                if _within(node.module or "", ("shared_core.db",)):
                    out[module].append(node.module or "")
                out[module] += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
            elif isinstance(node, ast.Import):
                out[module] += [a.name for a in node.names if _within(a.name, ("shared_core.db",))]
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                if isinstance(base, ast.Name) and base.id in ("store", "core", "kernel"):
                    out[module].append(f"{base.id}.{node.attr}")
    return {m: v for m, v in out.items() if v}


def long_modules() -> dict[str, int]:
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in modules().items()}
    return {m: n for m, n in sizes.items() if n > MAX_LINES}


def store_members() -> list[str]:
    from shared_core.store import MemoryStore

    return sorted(n for n in vars(MemoryStore) if not n.startswith("_"))


# -- the rules ------------------------------------------------------------------------------------


def test_no_import_cycles():
    assert import_cycles() == []


def test_services_do_not_import_the_store():
    assert store_importers() == []


def test_sql_lives_in_backends_indexes_and_repositories():
    assert sql_sites() == {}


def test_no_backend_name_comparisons_outside_the_backends():
    assert dialect_sites() == {}


def test_the_lock_is_taken_through_the_kernel():
    assert lock_sites() == {}


def test_adapters_use_the_public_core_only():
    assert adapter_reaches() == {}


def test_modules_stay_small():
    assert long_modules() == {}


def test_the_store_is_a_small_facade():
    members = store_members()
    assert len(members) <= MAX_STORE_MEMBERS, members


def test_the_rules_see_what_they_should():
    """The measures are not vacuous: they find the SQL, cycles and imports that are there."""
    assert len(modules()) > 100 and "shared_core.store" in import_graph()["shared_core"]
    assert "shared_core.kernel" in import_graph()["shared_core.store"]
    repositories = [m for m in modules() if _is_repository(m)]
    assert repositories and any(_STATEMENT.match(t) for m in repositories for _, t in _strings(m))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print("import cycles:", import_cycles())
    print("services importing the store:", store_importers())
    print("SQL outside its homes:", {m: len(v) for m, v in sql_sites().items()})
    print("dialect comparisons:", dialect_sites())
    print("lock outside the kernel:", lock_sites())
    print("adapters reaching inside:", adapter_reaches())
    print("modules over", MAX_LINES, "lines:", long_modules())
    print("MemoryStore public members:", len(store_members()))
