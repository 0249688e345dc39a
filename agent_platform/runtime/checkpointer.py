"""The thread checkpointer: PostgresSaver on PostgreSQL, SqliteSaver on the embedded default.

One saver per process, created lazily and recreated after a fork (Celery prefork workers must not
share the parent's sockets). The PostgreSQL conninfo is read from Django's settings at call time,
so pytest-django's test database is used under tests. The checkpoint tables are created by
``migrate`` (``checkpointer_setup`` on post_migrate, under an advisory lock), never on a run's path.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

from django.conf import settings
from langgraph.checkpoint.base import BaseCheckpointSaver

_lock = threading.Lock()
_state: dict[str, object] = {"pid": None, "key": None, "saver": None, "resource": None}


def _is_postgres() -> bool:
    return "postgresql" in settings.DATABASES["default"]["ENGINE"]


# Serialises concurrent set-ups of one database's checkpoint tables. Taken by polling, never by a
# blocking pg_advisory_lock: the holder's CREATE INDEX CONCURRENTLY waits for every open transaction,
# a blocked lock request included, which would be a deadlock.
SETUP_TRY_LOCK = "SELECT pg_try_advisory_lock(hashtext('agent_platform.checkpoint_setup')) AS held"
SETUP_UNLOCK = "SELECT pg_advisory_unlock(hashtext('agent_platform.checkpoint_setup'))"
SETUP_LOCK_WAIT_SECONDS = 300


def postgres_conninfo(db: dict | None = None) -> str:
    """libpq conninfo of a Django database (``settings_dict``; default: the default database)."""
    from psycopg.conninfo import make_conninfo

    db = db if db is not None else settings.DATABASES["default"]
    params = {
        "dbname": db.get("NAME"),
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": str(db["PORT"]) if db.get("PORT") else None,
    }
    return make_conninfo("", **{k: v for k, v in params.items() if v})


def _open() -> tuple[str, BaseCheckpointSaver, object]:
    if _is_postgres():
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        conninfo = postgres_conninfo()
        pool = ConnectionPool(
            conninfo=conninfo,
            min_size=1,
            max_size=10,
            open=True,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        )
        return conninfo, PostgresSaver(pool), pool

    from langgraph.checkpoint.sqlite import SqliteSaver

    path = Path(settings.CHECKPOINT_SQLITE_PATH)
    path.parent.mkdir(parents=True, exist_ok=True)
    # One connection shared by this process's threads (the saver serialises them); wait for another
    # process's writer instead of failing at once.
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=20)
    saver = SqliteSaver(conn)
    saver.setup()  # the embedded default's own file, not the database migrate manages: cheap, local
    return str(path), saver, conn


def checkpointer_setup(*, db: dict | None = None) -> None:
    """Create or upgrade the PostgreSQL checkpoint tables of ``db`` (a Django ``settings_dict``).

    Idempotent; concurrent callers on one database take turns on an advisory lock instead of racing in
    the saver's migrations (``UniqueViolation`` on ``checkpoint_migrations_pkey``). Autocommit, on its own
    connection: the saver creates indexes concurrently, which no transaction may enclose.
    """
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    with psycopg.connect(postgres_conninfo(db), autocommit=True, row_factory=dict_row) as conn:
        deadline = time.monotonic() + SETUP_LOCK_WAIT_SECONDS
        while not conn.execute(SETUP_TRY_LOCK).fetchone()["held"]:
            if time.monotonic() > deadline:
                raise TimeoutError("Another process has been setting up the checkpoint tables for too long.")
            time.sleep(0.1)
        try:
            PostgresSaver(conn).setup()
        finally:
            conn.execute(SETUP_UNLOCK)


def _current_key() -> str:
    return postgres_conninfo() if _is_postgres() else str(Path(settings.CHECKPOINT_SQLITE_PATH))


def checkpointer_get() -> BaseCheckpointSaver:
    """The process's checkpointer, opened on first use and reopened after a fork or a settings change."""
    pid, key = os.getpid(), _current_key()
    with _lock:
        if _state["saver"] is not None and _state["pid"] == pid and _state["key"] == key:
            return _state["saver"]  # type: ignore[return-value]
        if _state["pid"] == pid:
            _close_resource()
        # After a fork the inherited pool/connection belongs to the parent: drop it without closing.
        opened_key, saver, resource = _open()
        _state.update(pid=pid, key=opened_key, saver=saver, resource=resource)
        return saver


def _close_resource() -> None:
    resource = _state.get("resource")
    if resource is not None:
        try:
            resource.close()  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - closing a broken pool must not mask the caller's work
            pass
    _state.update(saver=None, resource=None, key=None)


def checkpointer_close() -> None:
    """Close this process's checkpointer (tests, before their database is dropped)."""
    with _lock:
        if _state["pid"] == os.getpid():
            _close_resource()
