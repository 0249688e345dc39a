"""The README is a newcomer's guide: at most 300 lines, no account of machine load (measured figures live in
docs/), and no benchmark writes into it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 300
# How a measured figure's conditions read: "at a load average of 1.3", "at a load of 9-16", "(load ~10)".
MACHINE_LOAD = re.compile(r"\bload(?: average)?\b(?: of)? *[~≈]? *\d|load average", re.I)


def readme_problems(text: str) -> list[str]:
    problems = []
    if (lines := len(text.splitlines())) > README_MAX_LINES:
        problems.append(f"{lines} lines, more than {README_MAX_LINES}")
    problems += [f"machine load: {m.group(0)!r}" for m in MACHINE_LOAD.finditer(text)]
    return problems


def test_readme_is_at_most_300_lines_and_tells_no_machine_load():
    assert readme_problems((ROOT / "README.md").read_text(encoding="utf-8")) == []


def test_the_readme_check_fails_on_a_long_readme_or_a_machine_load():
    assert readme_problems("line\n" * 300) == []
    assert readme_problems("line\n" * 301) == ["301 lines, more than 300"]
    assert len(readme_problems("took 54 s at a load average of 1.3–1.7")) == 1
    assert len(readme_problems("17 ms at the median (the machine at load ~10)")) == 1


def names_the_readme(source: str) -> bool:
    """A string in the code (not a docstring's prose) that is the README's file name."""
    return any(
        isinstance(node, ast.Constant) and node.value == "README.md" for node in ast.walk(ast.parse(source))
    )


def test_no_benchmark_writes_into_the_readme():
    writers = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "bench").rglob("*.py"))
        if names_the_readme(path.read_text(encoding="utf-8"))
    ]
    assert writers == []
    assert names_the_readme('README = ROOT / "README.md"')
    assert not names_the_readme('"""Traces (see its README.md)."""')
