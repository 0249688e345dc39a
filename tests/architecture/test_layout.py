"""The layout rule: no top-level package shadows a standard-library module (function limits: ``test_function_limits``)."""

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
