"""Tests that start real processes: Celery workers, Daphne servers, ``manage.py`` commands, a llama.cpp
server, interpreters of their own. ``make test`` runs this folder on its own, one test at a time (the
rest of the suite runs on xdist workers): a process started beside a busy neighbour is what made these
tests slow, and their time limits are what a loaded machine breaks first. CI's second pass runs them on
two workers: the real llama.cpp server's tests as one group on one worker (it keeps one core busy), the
others spread over the two workers around that group."""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of the real llama.cpp server goes to one xdist group: one worker starts the server once
    and keeps it (CI's second pass runs these on their own worker beside the rest, one at a time)."""
    for item in items:
        if "local_model_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("local_model"))
