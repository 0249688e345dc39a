"""The layout rules: no top-level package shadows a standard-library module, no module is too long."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "context_engine", "agent_platform", "compression", "conversations")


def test_no_top_level_package_shadows_the_standard_library():
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    modules = {p.stem for p in ROOT.glob("*.py")}
    shadowing = sorted((packages | modules) & set(sys.stdlib_module_names))
    assert packages >= set(PACKAGES)
    assert shadowing == []


MAX_MODULE_LINES = 400


def test_no_module_is_over_400_lines_outside_migrations_and_bench():
    # A module that grows past this becomes a package of smaller ones (STYLE: one job per module).
    too_long = {
        str(path.relative_to(ROOT)): lines
        for top in (*PACKAGES, "tests")
        for path in (ROOT / top).rglob("*.py")
        if "migrations" not in path.parts
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert too_long == {}
