"""Transient database errors: what a run's step is tried again on, and how.

A connection the server killed (``pg_terminate_backend``, a restart, a failover, a proxy's idle cut)
raises ``OperationalError`` or, on its next use, ``InterfaceError``: from Django's wrapper on the
executor's connection, or from psycopg itself on the checkpointer's pool. Such a step is tried again on
a fresh connection, at most ``RUN_DB_RETRIES`` more times, after ``RUN_DB_RETRY_SECONDS`` and then
twice as long each time (at most ``MAX_PAUSE_SECONDS``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import suppress

import psycopg
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger(__name__)

TRANSIENT_DB_ERRORS: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)
MAX_PAUSE_SECONDS = 8.0


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc``, or what it was raised from (a graph wraps its nodes' errors), is one of them."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, TRANSIENT_DB_ERRORS):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def retry_pauses() -> Iterator[float]:
    """The pauses before each retry: as many as ``RUN_DB_RETRIES``, doubling from ``RUN_DB_RETRY_SECONDS``."""
    pause = settings.RUN_DB_RETRY_SECONDS
    for _ in range(settings.RUN_DB_RETRIES):
        yield pause
        pause = min(pause * 2, MAX_PAUSE_SECONDS)


def connection_refresh() -> None:
    """Drop this thread's database connection, so its next query opens a fresh one (a broken psycopg
    connection is discarded by its pool when returned: the checkpointer needs nothing here)."""
    if connection.in_atomic_block:  # a caller's transaction: closing it is the caller's to decide
        return
    with suppress(Exception):  # a dead socket may complain while closing; it is closed either way
        connection.close()
