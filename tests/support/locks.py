"""Observing PostgreSQL lock waits from a test, instead of sleeping and hoping the waiter waits."""

from __future__ import annotations

import time

from django.db import connection


def lock_waiters() -> int:
    """How many other backends of this database are waiting on a lock right now."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


def wait_for_lock_waiters(count: int = 1, *, timeout: float = 10.0) -> bool:
    """True once ``count`` backends wait on a lock (polled every 20 ms), False after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lock_waiters() >= count:
            return True
        time.sleep(0.02)
    return False
