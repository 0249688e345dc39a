"""The project's top-level packages must not shadow standard-library modules."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_top_level_package_shadows_the_standard_library():
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    modules = {p.stem for p in ROOT.glob("*.py")}
    shadowing = sorted((packages | modules) & set(sys.stdlib_module_names))
    assert packages >= {"agent_platform", "compression", "conversations"}
    assert shadowing == []


def test_the_design_name_platform_would_shadow_the_standard_library():
    # Why the project package is agent_platform: keep the reason checked, not just remembered.
    assert "platform" in sys.stdlib_module_names
