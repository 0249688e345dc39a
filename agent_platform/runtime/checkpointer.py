"""The thread checkpointer: PostgresSaver on PostgreSQL, SqliteSaver on the embedded default.

One saver per process, created lazily and recreated after a fork (Celery prefork workers must not
share the parent's sockets). The PostgreSQL conninfo is read from Django's settings at call time,
so pytest-django's test database is used under tests.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from django.conf import settings
from langgraph.checkpoint.base import BaseCheckpointSaver

_lock = threading.Lock()
_state: dict[str, object] = {"pid": None, "key": None, "saver": None, "resource": None}


def _is_postgres() -> bool:
    return "postgresql" in settings.DATABASES["default"]["ENGINE"]


def postgres_conninfo() -> str:
    from psycopg.conninfo import make_conninfo

    db = settings.DATABASES["default"]
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
        saver = PostgresSaver(pool)
        saver.setup()  # idempotent; needs autocommit (CREATE INDEX CONCURRENTLY)
        return conninfo, saver, pool

    from langgraph.checkpoint.sqlite import SqliteSaver

    path = Path(settings.CHECKPOINT_SQLITE_PATH)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    return str(path), saver, conn


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
