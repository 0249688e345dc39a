"""Benchmarks (issue 8): print tables, never gate CI. Each module has ``run() -> list[dict]``."""
