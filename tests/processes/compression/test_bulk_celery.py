"""Bulk compaction against real services: a row locked by another PostgreSQL connection is skipped at
once, and ``compact_threads --async`` through a real Celery worker (Redis broker, a subprocess on the
same test database, the offline model) compresses each thread exactly once, duplicates included."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from compression.models import CompressionJob, CompressionRecord
from tests.compression._threads import compact, repository_for
from tests.context_engine.fakes import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[3]
CELERY = Path(sys.executable).with_name("celery")
WAIT_SECONDS = 120


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_row_locked_by_another_connection_is_skipped_at_once(make_thread, monkeypatch):
    from agent_platform.runtime.checkpointer import postgres_conninfo

    model = ScriptedChatModel(summaries=["## SESSION INTENT\nbulk"])
    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
    free = make_thread("free", pressure=0.99)
    locked = make_thread("locked", pressure=0.95)
    before = repository_for(locked).get_values()

    with psycopg.connect(postgres_conninfo()) as other:  # a transaction stays open until the block ends
        other.execute("SET lock_timeout = '60s'")
        other.execute("SELECT id FROM conversations_conversation WHERE id = %s FOR UPDATE", [locked.pk])
        began = time.monotonic()
        report = compact()
        elapsed = time.monotonic() - began
        other.rollback()

    assert elapsed < 10, "a locked thread must be skipped at once (NOWAIT), never waited on"
    assert {t["thread"]: t["outcome"] for t in report["threads"]} == {
        str(free.thread_id): "completed",
        str(locked.thread_id): "skipped_busy",
    }
    assert len(model.summary_prompts) == 1
    assert not CompressionRecord.objects.filter(conversation=locked).exists()
    assert repository_for(locked).get_values() == before


# --- a real Celery worker ---------------------------------------------------------------------------


def _database_url() -> str:
    db = connection.settings_dict  # pytest-django's test database, which the worker must share
    user = quote(db.get("USER") or "postgres")
    password = f":{quote(db['PASSWORD'])}" if db.get("PASSWORD") else ""
    host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{quote(db['NAME'])}"


@pytest.fixture
def celery_worker(tmp_path):
    """A two-process Celery worker on a queue of its own, against the test database and Redis."""
    queue = f"bulk-test-{uuid.uuid4().hex[:10]}"
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.test_settings",
        "DATABASE_URL": _database_url(),
        "REDIS_URL": os.environ["REDIS_URL"],
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,  # where this process sends the tasks
        "PYTHONUNBUFFERED": "1",
    }
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(CELERY), "-A", "config", "worker", "-Q", queue, "--pool=prefork", "-c", "2",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info",
             "-n", f"{queue}@%h"],
            cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield {"queue": queue, "log": log, "process": process}
    finally:
        process.send_signal(signal.SIGTERM)  # warm shutdown: finish what is running, then exit
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        import redis

        redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(queue)


def _succeeded(log: Path) -> list[dict]:
    """The return values the worker logged, one per finished task."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        if "thread_compact[" in line and " succeeded in " in line:
            found.append(ast.literal_eval(line.split(" succeeded in ", 1)[1].split(": ", 1)[1]))
    return found


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_async_path_through_a_real_worker_compresses_each_thread_exactly_once(make_thread, celery_worker):
    from compression.tasks import thread_compress_task

    threads = [make_thread(f"t{i}", pressure=0.99 - i / 100) for i in range(6)]

    queued = compact("--async", "--queue", celery_worker["queue"])

    assert queued["queued"] == [str(t.thread_id) for t in threads]
    # Redeliveries of two tasks (same batch): they must replay, not compress a second time.
    for thread in threads[:2]:
        thread_compress_task.apply_async(args=(thread.pk, queued["batch"]), queue=celery_worker["queue"])
    expected = len(threads) + 2
    deadline = time.monotonic() + WAIT_SECONDS
    while len(_succeeded(celery_worker["log"])) < expected and time.monotonic() < deadline:
        assert celery_worker["process"].poll() is None, celery_worker["log"].read_text()
        time.sleep(0.3)
    results = _succeeded(celery_worker["log"])
    assert len(results) == expected, celery_worker["log"].read_text()[-4000:]

    assert sorted(r["conversation_id"] for r in results) == sorted(
        [t.pk for t in threads] + [t.pk for t in threads[:2]]
    )
    assert {r["label"] for r in results} == {"completed"}
    for thread in threads:
        records = CompressionRecord.objects.filter(conversation=thread)
        assert [(r.trigger, r.status) for r in records] == [("bulk", "completed")]
        # The key is the job's (one owner): a redelivery found it and replayed the job's result.
        jobs = CompressionJob.objects.filter(conversation=thread)
        assert [(j.idempotency_key, j.status, j.record_id) for j in jobs] == [
            (f"bulk:{queued['batch']}:{thread.pk}", "succeeded", records[0].pk)
        ]
        event = repository_for(thread).get_values()["_summarization_event"]
        assert event["cutoff_index"] == records[0].cutoff_index > 0
