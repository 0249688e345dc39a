"""The first-party import graph, read from the source (no import is executed): every module of every
package and the project modules each imports, function-local imports included (hiding an import
inside a function does not remove the dependency)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Floors, top down: a package imports only packages on floors below it.
FLOORS = ("config", "compression", "conversations", "agent_platform", "context_engine")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(packages: tuple[str, ...] = FLOORS) -> dict[str, Path]:
    """Every module of ``packages`` (migrations included: they are code that runs)."""
    return {module_name(path): path for package in packages for path in (ROOT / package).rglob("*.py")}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The project module ``name`` refers to: itself, or the package holding the imported attribute."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imported_names(module: str, path: Path) -> list[str]:
    """Every dotted name ``module`` imports (``from a.b import c`` gives ``a.b.c``), absolute."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def import_graph(packages: tuple[str, ...] = FLOORS) -> dict[str, set[str]]:
    known = modules(packages)
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        targets = {_resolve(name, known) for name in imported_names(module, path)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    tarjan = _Tarjan(graph)
    for node in sorted(graph):
        if node not in tarjan.index:
            tarjan.visit(node)
    return tarjan.found


class _Tarjan:
    def __init__(self, graph: dict[str, set[str]]) -> None:
        self.graph = graph
        self.index: dict[str, int] = {}
        self.low: dict[str, int] = {}
        self.stack: list[str] = []
        self.on_stack: set[str] = set()
        self.found: list[list[str]] = []

    def visit(self, node: str) -> None:
        index, low = self.index, self.low
        index[node] = low[node] = len(index)
        self.stack.append(node)
        self.on_stack.add(node)
        for target in self.graph[node]:
            if target not in index:
                self.visit(target)
                low[node] = min(low[node], low[target])
            elif target in self.on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node] and len(component := self.pop_component(node)) > 1:
            self.found.append(sorted(component))

    def pop_component(self, root: str) -> list[str]:
        component = []
        while True:
            member = self.stack.pop()
            self.on_stack.discard(member)
            component.append(member)
            if member == root:
                return component


def floor_of(module: str) -> int:
    return FLOORS.index(module.split(".")[0])


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Every edge that imports a package on the same floor's other side or a floor above."""
    return {
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if module.split(".")[0] != target.split(".")[0] and floor_of(target) <= floor_of(module)
    }
