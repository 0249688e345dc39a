"""The checkpoint tables are created by ``migrate`` (under an advisory lock), never on a run's path: on
a fresh PostgreSQL database concurrent set-ups wait for each other, and two workers opening the
checkpointer at the same moment after ``migrate`` both succeed."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid

import psycopg
import pytest
from django.db import connection
from langgraph.checkpoint.postgres import PostgresSaver

from agent_platform.runtime.checkpointer import checkpointer_close, checkpointer_setup, postgres_conninfo
from conversations.models import AgentRun
from conversations.services import message_intake
from tests.processes.support import ROOT, service_env

pytestmark = pytest.mark.postgres

# A worker's first use of the checkpointer, started by two processes at the same instant.
FIRST_USE = """
import sys, time
import django
django.setup()
from agent_platform.runtime.checkpointer import checkpointer_get
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
saver = checkpointer_get()
assert saver.get_tuple({"configurable": {"thread_id": sys.argv[2], "checkpoint_ns": ""}}) is None
print("ok")
"""


@pytest.fixture
def fresh_database():
    """A new, empty PostgreSQL database beside the test database; dropped afterwards."""
    admin = dict(connection.settings_dict, NAME="postgres")
    name = f"ap_fresh_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_conninfo(admin), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    db = dict(connection.settings_dict, NAME=name)
    try:
        yield db
    finally:
        with psycopg.connect(postgres_conninfo(admin), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _url(db: dict) -> str:
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db.get('USER') or 'postgres'}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


def _checkpoint_versions(db: dict) -> list[int]:
    with psycopg.connect(postgres_conninfo(db)) as conn:
        return [row[0] for row in conn.execute("SELECT v FROM checkpoint_migrations ORDER BY v")]


@pytest.mark.django_db
def test_concurrent_setups_on_a_fresh_database_wait_for_each_other(fresh_database):
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def setup() -> None:
        barrier.wait()
        try:
            checkpointer_setup(db=fresh_database)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    racers = [threading.Thread(target=setup) for _ in range(4)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)
    assert errors == []
    assert _checkpoint_versions(fresh_database) == list(range(len(PostgresSaver.MIGRATIONS)))


@pytest.mark.django_db
def test_migrate_creates_the_checkpoint_tables_and_two_workers_start_together(fresh_database):
    env = service_env(DATABASE_URL=_url(fresh_database), DJANGO_SETTINGS_MODULE="config.settings")
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert migrate.returncode == 0, migrate.stderr
    assert _checkpoint_versions(fresh_database) == list(range(len(PostgresSaver.MIGRATIONS)))

    start_at = str(time.time() + 4)  # both processes are set up by then
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", FIRST_USE, start_at, f"thread-{n}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        for n in range(2)
    ]
    outputs = [process.communicate(timeout=120)[0].decode() for process in workers]
    assert [process.returncode for process in workers] == [0, 0], outputs


@pytest.mark.django_db
def test_a_run_never_sets_up_the_checkpoint_tables(
    user, agent, monkeypatch, django_capture_on_commit_callbacks
):
    from conversations.services import thread_create

    def setup_on_the_run_path(self):
        raise AssertionError("the run path must not set up the checkpoint tables")

    checkpointer_close()  # the next use opens a new saver, as a fresh worker process does
    monkeypatch.setattr(PostgresSaver, "setup", setup_on_the_run_path)
    thread = thread_create(user=user, agent_slug=agent.slug)
    with django_capture_on_commit_callbacks(execute=True):
        run = message_intake(thread_id=thread.thread_id, user=user, content="hello").run
    run.refresh_from_db()
    assert (run.status, run.error) == (AgentRun.Status.SUCCEEDED, "")
