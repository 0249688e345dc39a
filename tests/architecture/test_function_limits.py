"""Limits that shape seams, not line counts (STYLE "Layout and names"): no function of the engine is
longer than 60 lines or takes more than 7 parameters (``self`` and ``cls`` not counted), and the
engine's packages depend on each other without a loop. Ruff's C901, PLR0913 and PLR0915 hold the same
line across the tree (``pyproject.toml``); this test is the engine's, where no ``noqa`` can lift it."""

from __future__ import annotations

import ast

import pytest

from tests.architecture.imports import ROOT, cycles, import_graph

MAX_LINES = 60
MAX_PARAMETERS = 7


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return len([n for n in names if n not in ("self", "cls")])


def over_limits(source: str, *, name: str) -> list[str]:
    """Every function in ``source`` over the limits, as ``name:line function (lines, parameters)``."""
    found = []
    for node in _functions(ast.parse(source)):
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        parameters = _parameters(node)
        if lines > MAX_LINES or parameters > MAX_PARAMETERS:
            found.append(f"{name}:{node.lineno} {node.name} ({lines} lines, {parameters} parameters)")
    return found


def test_no_engine_function_is_over_60_lines_or_7_parameters():
    engine = ROOT / "context_engine"
    found = [
        problem
        for path in sorted(engine.rglob("*.py"))
        for problem in over_limits(path.read_text(encoding="utf-8"), name=str(path.relative_to(ROOT)))
    ]
    assert found == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(self, a, b, c, d, e, f, g):\n    pass\n", []),
        ("def f(a, b, c, d, e, f, g, h):\n    pass\n", ["m:1 f (2 lines, 8 parameters)"]),
        ("def f(*args, a, b, c, d, e, f, **kw):\n    pass\n", ["m:1 f (2 lines, 8 parameters)"]),
        ("def f():\n" + "    x = 1\n" * 59, []),
        ("class A:\n    async def f(self):\n" + "        x = 1\n" * 60, ["m:2 f (61 lines, 0 parameters)"]),
    ],
)
def test_the_limit_finder_counts_lines_and_parameters(source, expected):
    assert over_limits(source, name="m") == expected


def _engine_package(module: str) -> str:
    """``context_engine.summary.call`` -> ``context_engine.summary``; a top-level module is its own."""
    return ".".join(module.split(".")[:2])


def test_the_engines_packages_have_no_loop():
    graph = import_graph(("context_engine",))
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        own = _engine_package(module)
        packages.setdefault(own, set()).update(t for t in map(_engine_package, targets) if t != own)
    assert cycles(packages) == []
