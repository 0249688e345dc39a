"""Run leases: renewed while a run executes; a run whose worker died is reclaimed by its redelivered
task (a real Celery worker whose pool child is killed), by the recovery timer once the lease runs out,
and by an in-process server at start."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from agent_platform.models import Agent, ModelEndpoint
from conversations.models import AgentRun
from conversations.services import message_intake, run_claim, runs_recover, thread_create
from conversations.services.leases import run_is_orphaned, run_lease
from conversations.services.threads import NewMessage, message_append
from tests.processes.support import ROOT, celery_worker, daphne_server, tasks_sent_to

LEASE = 3


def _wait_for(predicate, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.1)


@pytest.fixture
def stub_agent(openai_stub, monkeypatch):
    monkeypatch.setenv("STUB_API_KEY", "sk-test")
    endpoint = ModelEndpoint.objects.create(
        name="stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY"
    )
    return Agent.objects.create(
        name="Stubbed", slug="stubbed", endpoint=endpoint, model_name="gpt-4o-mini", tools=[]
    )


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_the_lease_is_renewed_while_the_run_executes_and_expires_without_its_holder(thread, user, settings):
    settings.RUN_LEASE_SECONDS = 0.6  # renewed every 0.2 s
    # The holder is this live process: judged by RUN_LEASE_STUCK_SECONDS (a lease and a half here).
    settings.RUN_LEASE_STUCK_SECONDS = 0.9
    run = message_intake(thread_id=thread.thread_id, user=user, content="hi").run
    AgentRun.objects.filter(pk=run.pk).update(status="queued", started_at=None, heartbeat_at=None, attempts=0)
    assert run_claim(run_id=run.pk)
    run.refresh_from_db()
    claimed_at = run.heartbeat_at
    with run_lease(run_id=run.pk, worker=run.worker):
        time.sleep(1.5)  # two and a half leases: alive only because it is renewed
        run.refresh_from_db()
        assert run.heartbeat_at > claimed_at
        assert not run_is_orphaned(run)
    time.sleep(1.0)  # the holder stopped renewing (as if its process died)
    run.refresh_from_db()
    assert run_is_orphaned(run)
    assert runs_recover(dispatch=False).requeued == [run.pk]


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_run_whose_pool_child_is_killed_is_reclaimed_by_the_redelivered_task(
    user, stub_agent, openai_stub, tmp_path, settings
):
    openai_stub.reply("too slow to be heard", delay=120)
    openai_stub.reply("the answer after the crash")
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    settings.RUN_EXECUTION = "celery"
    with (
        celery_worker(tmp_path, RUN_LEASE_SECONDS=str(LEASE), STUB_API_KEY="sk-test") as worker,
        tasks_sent_to(worker.queue),
    ):
        run = message_intake(thread_id=thread.thread_id, user=user, content="hello").run
        _wait_for(lambda: len(openai_stub.requests) == 1, what="the first model call")
        run.refresh_from_db()
        assert run.status == "running"
        child_pid = int(run.worker.rpartition(":")[2])
        assert child_pid != worker.process.pid  # the pool child, not the worker's main process

        os.kill(child_pid, signal.SIGKILL)

        _wait_for(
            lambda: AgentRun.objects.filter(pk=run.pk, status__in=["succeeded", "failed"]).exists(),
            what=lambda: f"the run to finish; worker log:\n{worker.text()[-3000:]}",
        )
    run.refresh_from_db()
    assert (run.status, run.error, run.attempts) == ("succeeded", "", 2)
    assert run.worker != f"{socket.gethostname()}:{child_pid}"
    replies = list(thread.messages.filter(role="assistant").values_list("content", flat=True))
    assert replies == ["the answer after the crash"]
    assert thread.messages.filter(role="user").count() == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_run_whose_lease_ran_out_on_another_host_is_requeued_then_failed(thread, user, settings):
    settings.RUN_LEASE_SECONDS = 60
    run = message_intake(thread_id=thread.thread_id, user=user, content="hi").run
    AgentRun.objects.filter(pk=run.pk).update(status="queued", started_at=None, heartbeat_at=None, attempts=0)
    assert run_claim(run_id=run.pk)
    fresh = timezone.now() - timedelta(seconds=30)
    AgentRun.objects.filter(pk=run.pk).update(worker="elsewhere:1", heartbeat_at=fresh)
    assert runs_recover(dispatch=False).requeued == []  # half a lease old: its holder may be alive

    AgentRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    assert runs_recover(dispatch=False).requeued == [run.pk]
    assert run_claim(run_id=run.pk)  # the second claim
    AgentRun.objects.filter(pk=run.pk).update(
        worker="elsewhere:2", heartbeat_at=timezone.now() - timedelta(seconds=61)
    )
    report = runs_recover(dispatch=False)
    run.refresh_from_db()
    assert report.failed == [run.pk]
    assert run.status == "failed" and "stopped twice" in run.error


# What a server killed mid-run leaves: a run "running" under its dead process, one queued behind nothing.
LEFT_BEHIND = """
import socket
from django.contrib.auth import get_user_model
from django.utils import timezone
from agent_platform.models import Agent, ModelEndpoint
from conversations.models import AgentRun
from conversations.services import thread_create
from conversations.services.threads import NewMessage, message_append

user = get_user_model().objects.create_user("restart", password="pw-restart-123")
Agent.objects.create(name="Offline", slug="offline")
now = timezone.now()
for n, status in enumerate(["running", "queued"]):
    thread = thread_create(user=user, agent_slug="offline")
    message = message_append(conversation=thread, message=NewMessage(role="user", content=f"hello {n}",
                                                                      lc_message_id=f"m{n}"))
    dead = {"worker": f"{socket.gethostname()}:999999", "attempts": 1, "started_at": now, "heartbeat_at": now}
    AgentRun.objects.create(conversation=thread, input_message=message, status=status,
                            **(dead if status == "running" else {}))
"""


def test_an_in_process_server_recovers_at_start_what_the_previous_one_left(tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")
    }
    env.update(DJANGO_SETTINGS_MODULE="tests.e2e.settings", E2E_DIR=str(tmp_path), RUN_RECOVERY_TIMER="1")
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    subprocess.run([*manage, "shell", "-c", LEFT_BEHIND], cwd=ROOT, env=env, check=True)

    def statuses() -> list[tuple[str, int]]:
        with sqlite3.connect(tmp_path / "db.sqlite3", timeout=20) as db:
            return db.execute("SELECT status, attempts FROM conversations_agentrun ORDER BY id").fetchall()

    assert statuses() == [("running", 1), ("queued", 0)]
    with daphne_server(tmp_path, env=env):
        _wait_for(
            lambda: statuses() == [("succeeded", 2), ("succeeded", 1)],
            what=lambda: (
                f"recovery: {statuses()}\n"
                + "".join(log.read_text()[-3000:] for log in tmp_path.glob("daphne-*.log"))
            ),
        )


TAKEOVER_WITHIN = 15.0


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_surviving_worker_takes_a_dead_workers_run_back_within_15_seconds(
    user, stub_agent, openai_stub, tmp_path, settings
):
    """A whole worker on another machine died mid-run (no redelivery, no local pid to check): the
    surviving worker's recovery timer, on the default lease, takes the run back and executes it."""
    openai_stub.reply("taken over")
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    settings.RUN_EXECUTION = "celery"
    with (
        celery_worker(tmp_path, RUN_RECOVERY_TIMER="1", STUB_API_KEY="sk-test") as survivor,
        tasks_sent_to(survivor.queue),
    ):
        message = message_append(
            conversation=thread, message=NewMessage(role="user", content="hello", lc_message_id="m-dead")
        )
        died_at = timezone.now()  # its last renewal: the moment the other machine went silent
        run = AgentRun.objects.create(
            conversation=thread, input_message=message, status="running", worker="a-machine-that-died:4242",
            attempts=1, started_at=died_at, heartbeat_at=died_at,
        )  # fmt: skip
        _wait_for(
            lambda: AgentRun.objects.filter(pk=run.pk, status="succeeded").exists(),
            what=lambda: f"the takeover; worker log:\n{survivor.text()[-3000:]}",
        )
    run.refresh_from_db()
    taken_after = (run.started_at - died_at).total_seconds()
    assert taken_after <= TAKEOVER_WITHIN, f"taken back {taken_after:.1f} s after its worker died"
    assert run.attempts == 2 and run.worker.rpartition(":")[0] == socket.gethostname()
    assert thread.messages.get(role="assistant").content == "taken over"
