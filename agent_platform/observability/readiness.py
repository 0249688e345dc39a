"""Readiness: can this process serve? One cheap check per service it depends on, nothing cached, so a
load balancer that asks every second sees a failure at the next ask.

Each check returns ``None`` when the service answers, else a short reason. The checks: the database
(``SELECT 1``), the checkpoint tables (one indexed row read), Redis when ``REDIS_URL`` is set (PING),
and the workdir storage (the local root is a writable directory; a bucket answers HEAD).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection

from agent_platform.runtime.checkpointer import checkpointer_get
from agent_platform.workdir_storage import LOCAL, is_object_storage, thread_storage

CHECK_TIMEOUT_SECONDS = 2.0
PROBE_NAME = ".readyz-probe"


def _reason(exc: BaseException) -> str:
    return f"{exc.__class__.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_checkpoints() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # created by migrate: a missing table is a failed check
            cursor.execute("SELECT 1 FROM checkpoints LIMIT 1")
            cursor.fetchall()
        return
    saver = checkpointer_get()  # the embedded default's own file, opened (and set up) once per process
    with saver.lock:  # type: ignore[attr-defined]
        saver.conn.execute("SELECT 1 FROM checkpoints LIMIT 1").fetchall()  # type: ignore[attr-defined]


@functools.cache
def _redis_client(url: str):
    import redis

    return redis.Redis.from_url(
        url, socket_connect_timeout=CHECK_TIMEOUT_SECONDS, socket_timeout=CHECK_TIMEOUT_SECONDS
    )


def check_redis() -> None:
    _redis_client(settings.REDIS_URL).ping()


def check_workdir_storage() -> None:
    if settings.WORKDIR_STORAGE == LOCAL:
        root = Path(settings.WORKDIR_ROOT)
        root.mkdir(parents=True, exist_ok=True)
        if not os.access(root, os.W_OK | os.X_OK):
            raise PermissionError(f"{root} is not writable")
        return
    storage = thread_storage("")
    if is_object_storage(storage):
        storage.connection.meta.client.head_bucket(Bucket=storage.bucket_name)  # type: ignore[attr-defined]
        return
    storage.exists(PROBE_NAME)


def readiness_checks() -> dict[str, Callable[[], None]]:
    checks: dict[str, Callable[[], None]] = {
        "database": check_database,
        "checkpoints": check_checkpoints,
    }
    if settings.REDIS_URL:
        checks["redis"] = check_redis
    checks["workdir_storage"] = check_workdir_storage
    return checks


def readiness() -> dict[str, str | None]:
    """Every check's result by name: ``None`` when it answered, else the reason it did not. The
    checkpoint tables live in the database: when the database fails, they are not asked."""
    results: dict[str, str | None] = {}
    for name, check in readiness_checks().items():
        if name == "checkpoints" and results.get("database"):
            results[name] = "not checked: the database is unreachable"
            continue
        try:
            check()
            results[name] = None
        except Exception as exc:  # noqa: BLE001 - any failure of a service is its reason to report
            results[name] = _reason(exc)
    return results
