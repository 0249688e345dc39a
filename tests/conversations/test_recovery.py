"""A run left ``running`` by a crashed worker is re-queued once and executed, or failed the second time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from conversations.models import AgentRun
from conversations.services import message_intake, runs_recover
from conversations.services.execution import run_claim

pytestmark = [pytest.mark.django_db, pytest.mark.services]

DEAD_WORKER = "some-host-that-crashed:999999"


def _crashed_run(thread, user, *, minutes_ago=30, attempts=None):
    """A queued run claimed by a worker that then died (its lease last renewed ``minutes_ago``)."""
    run = message_intake(thread_id=thread.thread_id, user=user, content="hello").run  # on-commit not run
    assert run_claim(run_id=run.pk)
    past = timezone.now() - timedelta(minutes=minutes_ago)
    AgentRun.objects.filter(pk=run.pk).update(
        worker=DEAD_WORKER, started_at=past, heartbeat_at=past, **({"attempts": attempts} if attempts else {})
    )
    return run


def test_a_crashed_run_is_requeued_and_then_executed(thread, user, django_capture_on_commit_callbacks):
    run = _crashed_run(thread, user)
    with django_capture_on_commit_callbacks(execute=True):
        report = runs_recover()
    assert report.requeued == [run.pk] and report.failed == []
    run.refresh_from_db()
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert run.attempts == 2
    assert thread.messages.filter(role="assistant").count() == 1


def test_a_run_that_crashed_twice_is_failed_not_retried_forever(thread, user):
    run = _crashed_run(thread, user, attempts=2)
    report = runs_recover()
    run.refresh_from_db()
    assert report.failed == [run.pk]
    assert run.status == AgentRun.Status.FAILED and "stopped twice" in run.error


def test_a_live_run_is_left_alone(thread, user):
    run = _crashed_run(thread, user, minutes_ago=0)  # its lease was just renewed
    AgentRun.objects.filter(pk=run.pk).update(worker="another-host:1")
    assert runs_recover().requeued == []
    run.refresh_from_db()
    assert run.status == AgentRun.Status.RUNNING


def test_a_run_whose_local_worker_process_is_gone_is_recovered_at_once(thread, user):
    import socket

    run = _crashed_run(thread, user, minutes_ago=0)
    AgentRun.objects.filter(pk=run.pk).update(worker=f"{socket.gethostname()}:999999")  # no such pid
    assert runs_recover().requeued == [run.pk]


def test_recover_runs_command_reports_a_summary(thread, user, capsys):
    run = _crashed_run(thread, user)
    call_command("recover_runs")
    out = capsys.readouterr().out
    assert f"re-queued run {run.pk}" in out
    assert "1 run(s) re-queued, 0 failed, 1 queued run(s) started" in out


def test_worker_ready_signal_runs_recovery(thread, user):
    from celery.signals import worker_ready

    import conversations.tasks  # noqa: F401 - the worker imports it through autodiscover_tasks()

    run = _crashed_run(thread, user)
    worker_ready.send(sender=None)
    run.refresh_from_db()
    assert run.status in (AgentRun.Status.QUEUED, AgentRun.Status.SUCCEEDED)
    assert run.worker != DEAD_WORKER


@pytest.mark.parametrize("attempts", [1, 2], ids=["requeued", "failed"])
def test_recovery_closes_a_compression_its_lost_worker_left_started(thread, user, attempts):
    from compression.models import CompressionRecord

    run = _crashed_run(thread, user, attempts=attempts)
    started = {"type": "compression", "status": "started", "level": "summary", "before_tokens": 9000}
    ended = {**started, "status": "completed", "after_tokens": 3000}
    AgentRun.objects.filter(pk=run.pk).update(events=[started, ended, started])  # the second never ended

    runs_recover(dispatch=False)

    run.refresh_from_db()
    closing = run.events[-1]
    assert len(run.events) == 4
    assert (closing["type"], closing["status"], closing["level"], closing["reason"]) == (
        "compression", "failed", "summary", "worker_lost",
    )  # fmt: skip
    assert closing["before_tokens"] == 9000 and closing["error"].startswith("worker lost")
    record = CompressionRecord.objects.get(run=run)
    assert (record.status, record.reason, record.level) == ("failed", "worker_lost", "summary")

    runs_recover(dispatch=False)  # nothing left open, nothing closed twice
    run.refresh_from_db()
    assert len(run.events) == 4 and CompressionRecord.objects.filter(run=run).count() == 1


def test_a_run_whose_compressions_all_ended_gets_no_closing_event(thread, user):
    from compression.models import CompressionRecord

    run = _crashed_run(thread, user)
    events = [{"type": "compression", "status": "started"}, {"type": "compression", "status": "failed"}]
    AgentRun.objects.filter(pk=run.pk).update(events=events)
    runs_recover(dispatch=False)
    run.refresh_from_db()
    assert run.events == events and not CompressionRecord.objects.filter(run=run).exists()
