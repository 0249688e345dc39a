"""Folders are floors (STYLE "Floors"): ``config`` > ``compression`` > ``conversations`` >
``agent_platform`` > ``context_engine``. Imports only run down a floor, no module-level cycle exists
anywhere, and ``context_engine`` is pure Python: no Django, Channels, Celery or ninja, and no
first-party package. No allow-list: a rule with exceptions is not a rule."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.architecture.imports import (
    FLOORS,
    ROOT,
    cycles,
    import_graph,
    imported_names,
    modules,
    upward_imports,
)

FRAMEWORKS = ("django", "channels", "celery", "ninja", "daphne", "redis", "psycopg")


def test_imports_only_run_down_a_floor():
    assert upward_imports(import_graph()) == set()


def test_nothing_imports_the_project_package():
    graph = import_graph()
    assert {
        (m, t)
        for m, targets in graph.items()
        for t in targets
        if t.startswith("config") and not m.startswith("config")
    } == set()


def test_no_module_level_import_cycle():
    assert cycles(import_graph()) == []


def test_the_context_engine_imports_no_framework_and_no_first_party_package():
    first_party = set(FLOORS) - {"context_engine"}
    reached = {
        (module, name)
        for module, path in modules(("context_engine",)).items()
        for name in imported_names(module, path)
        if name.split(".")[0] in (*FRAMEWORKS, *first_party)
    }
    assert reached == set()


def test_the_context_engine_imports_without_django_settings():
    # Every module, in a fresh process with no settings module: nothing reaches for Django.
    code = (
        "import importlib, pkgutil, sys, context_engine\n"
        "for m in pkgutil.walk_packages(context_engine.__path__, 'context_engine.'):\n"
        "    importlib.import_module(m.name)\n"
        f"print(sorted({{n.split('.')[0] for n in sys.modules}} & {set(FRAMEWORKS)!r}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert cycles(graph) == expected


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"conversations.views": {"compression.panels"}}, {("conversations.views", "compression.panels")}),
        ({"compression.views": {"conversations.selectors"}}, set()),
        ({"context_engine.x": {"agent_platform.models"}}, {("context_engine.x", "agent_platform.models")}),
        ({"agent_platform.models": {"config.settings"}}, {("agent_platform.models", "config.settings")}),
    ],
)
def test_the_floor_rule_finds_upward_imports(graph, expected):
    assert upward_imports(graph) == expected
