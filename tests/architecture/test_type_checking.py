"""``make lint`` checks the engine as ``mypy --strict context_engine`` does: one mypy run reads
pyproject.toml (a second run with other flags would invalidate the first one's cache), so the engine's
section there must turn on every flag that ``--strict`` turns on in the installed mypy."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def strict_flags() -> list[str]:
    """The flags ``--strict`` enables, as the installed mypy's own help lists them (on one line: a wide
    terminal keeps argparse from wrapping them)."""
    help_text = subprocess.run(
        [sys.executable, "-m", "mypy", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "1000"},
    ).stdout
    listed = re.search(r"--strict\s+Strict mode; enables the following flags: (.+)", help_text)
    assert listed, "mypy --help no longer lists what --strict enables"
    return [flag.strip() for flag in listed.group(1).split(",")]


def engine_options() -> dict[str, object]:
    """mypy's options for ``context_engine``: the global section, then the engine's override."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    options = {key: value for key, value in config.items() if key != "overrides"}
    for override in config.get("overrides", []):
        if "context_engine" in override["module"]:
            options.update({key: value for key, value in override.items() if key != "module"})
    return options


def test_the_engine_is_checked_with_every_flag_of_strict():
    flags = strict_flags()
    assert len(flags) >= 10, flags  # the list was read, not an empty match
    options = engine_options()
    missing = []
    for flag in flags:
        name, wanted = (flag[5:], False) if flag.startswith("--no-") else (flag[2:], True)
        if options.get(name.replace("-", "_")) is not wanted:
            missing.append(flag)
    assert not missing, f"pyproject.toml's mypy settings for context_engine lack {missing}"
