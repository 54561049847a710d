"""The import graph of correlate/ and collectors/ has no circles: every import, at module level
or inside a function (a lazy import is still a dependency), read from the source with ast.
Imports under ``if TYPE_CHECKING:`` are left out: they are never executed."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("correlate", "collectors")


def _modules() -> dict[str, Path]:
    out = {}
    for top in PACKAGES:
        for path in (REPO / top).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, here: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules ``here`` imports: ``from p import m`` is the module ``p.m`` where that is
    one, else ``p`` (a package's own ``__init__`` run on the way is not counted: it is no
    dependency of the importing module's code); relative imports resolved."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = here if is_package else here.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".rstrip(".")
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return (found & modules) - {here}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {name: _imports(ast.parse(path.read_text()), name, path.name == "__init__.py",
                           set(modules))
            for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
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
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def test_the_import_graph_has_no_circles():
    found = cycles(import_graph(_modules()))
    assert not found, f"import circles: {found}"


def test_the_circle_check_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_a_module_imported_from_its_package_is_an_edge_to_the_module():
    modules = {"p", "p.a", "p.b", "p.c", "q"}
    tree = ast.parse("from p import a as x, WRITERS\n"
                     "if TYPE_CHECKING:\n    from q import Q\n"
                     "def f():\n    from . import b\n    import p.c\n")
    assert _imports(tree, "p.t", False, modules) == {"p", "p.a", "p.b", "p.c"}
