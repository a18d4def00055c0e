"""The package's modules import each other without a cycle.

The graph is read from the source (``ast``), not from an interpreter's import order: an edge
``a -> b`` for every module ``b`` that ``a`` names in an import, at the top of the module or in
a function — so a cycle that a deferred import hides at run time still fails here.
``from pkg import name`` is an edge to ``pkg.name`` when that is a module of the package, else
to ``pkg``.

Imports under ``if TYPE_CHECKING:`` are never executed; inside one concept they may refer back
(the reproduction's plan, experiments and context name each other's types). Between the
package's parts — its top-level modules and subpackages — they count too: the layers
(validation, config, engines, ..., reproduce, cli) must not refer upwards even for a type.
"""

from __future__ import annotations

import ast
from pathlib import Path

import attnsignal

ROOT = Path(attnsignal.__file__).parent
PACKAGE = "attnsignal"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(current: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """The import statements under ``if TYPE_CHECKING:`` (never executed)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """``{module: {modules it imports}}`` for every module of the package (package-internal
    edges only); with ``type_checking`` the imports under ``if TYPE_CHECKING:`` too."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        skip = set() if type_checking else _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node.level, node.module)
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    targets.append(sub if sub in mods else base)
            for t in targets:
                # the longest prefix that is a module of the package
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != name and (t == PACKAGE or t.startswith(PACKAGE + ".")):
                    graph[name].add(t)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a list of modules (first == last), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = dict.fromkeys(graph, WHITE)
    stack: list[str] = []

    def visit(u: str) -> list[str] | None:
        color[u] = GREY
        stack.append(u)
        for v in sorted(graph[u]):
            if color[v] == GREY:
                return stack[stack.index(v):] + [v]
            if color[v] == WHITE:
                found = visit(v)
                if found:
                    return found
        stack.pop()
        color[u] = BLACK
        return None

    for u in sorted(graph):
        if color[u] == WHITE:
            found = visit(u)
            if found:
                return found
    return None


def test_the_graph_is_read_from_every_module():
    g = import_graph()
    assert "attnsignal.config" in g and "attnsignal.engines.chain" in g
    assert "attnsignal.config" in g["attnsignal.engines.chain"]  # a top-level import
    assert "attnsignal.engines._kernel_common" in g["attnsignal.engines.chain"]  # in a method
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _part(module: str) -> str:
    """The top-level module or subpackage ``module`` belongs to (``attnsignal.engines``)."""
    return ".".join(module.split(".")[:2])


def test_the_parts_of_the_package_form_layers():
    parts: dict[str, set[str]] = {}
    for a, targets in import_graph(type_checking=True).items():
        parts.setdefault(_part(a), set())
        for b in targets:
            parts.setdefault(_part(b), set())
            if _part(a) != _part(b):
                parts[_part(a)].add(_part(b))
    assert {"attnsignal.config", "attnsignal.engines", "attnsignal.reproduce"} <= set(parts)
    cycle = find_cycle(parts)
    assert cycle is None, "parts that import each other: " + " -> ".join(cycle or [])
