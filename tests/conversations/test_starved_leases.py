"""A starved machine slows runs down, it does not fail them (issue 41, item 4): a live process of this
machine is not judged by its renewals' timing (only once silent for ``RUN_LEASE_STUCK_SECONDS``); a
run taken back from its worker makes that worker stop writing (the lease is checked, and renewed, in
every transcript write's own transaction); and the run's next holder goes on from the checkpoint,
never doing again what the lost worker did."""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import pytest
from django.utils import timezone
from langchain_core.messages import AIMessage, HumanMessage

from conversations.models import AgentRun, Message
from conversations.services import message_intake, runs_recover
from conversations.services.execution import run_claim, run_perform
from conversations.services.leases import holder_lost
from tests.compression._threads import repository_for
from tests.conversations.consistency import assert_transcript_equals_checkpoint

pytestmark = [pytest.mark.django_db, pytest.mark.services]

HERE = socket.gethostname()


def _silent_for(seconds: float) -> dict:
    now = timezone.now()
    return {
        "heartbeat_at": now - timedelta(seconds=seconds),
        "started_at": now - timedelta(seconds=seconds),
        "now": now,
    }


def test_a_live_local_holder_is_not_judged_by_late_renewals(settings):
    settings.RUN_LEASE_SECONDS, settings.RUN_LEASE_STUCK_SECONDS = 12, 120
    live = f"{HERE}:{os.getppid()}"  # a process of this machine that exists (the test runner's parent)
    assert not holder_lost(worker=live, **_silent_for(60))  # five leases without a renewal: starved, alive
    assert holder_lost(worker=live, **_silent_for(121))  # silent past the stuck bound: taken back
    assert holder_lost(worker=f"{HERE}:999999", **_silent_for(0))  # its process is gone: at once
    assert holder_lost(worker="another-host:1", **_silent_for(13))  # elsewhere: the lease decides
    assert not holder_lost(worker="another-host:1", **_silent_for(11))


def _claimed(thread, user, *, worker: str, seconds_ago: float) -> AgentRun:
    run = message_intake(thread_id=thread.thread_id, user=user, content="hello").run  # on-commit not run
    assert run_claim(run_id=run.pk)
    past = timezone.now() - timedelta(seconds=seconds_ago)
    AgentRun.objects.filter(pk=run.pk).update(worker=worker, started_at=past, heartbeat_at=past)
    return run


def test_recovery_leaves_a_starved_local_run_alone(thread, user):
    run = _claimed(thread, user, worker=f"{HERE}:{os.getppid()}", seconds_ago=40)
    assert runs_recover(dispatch=False).requeued == []
    run.refresh_from_db()
    assert run.status == AgentRun.Status.RUNNING


def test_a_run_taken_back_mid_run_makes_its_old_worker_write_nothing(
    thread, user, scripted_model, monkeypatch, django_capture_on_commit_callbacks
):
    from conversations.services import execution

    scripted_model("an answer the old worker must not record")
    entry = execution.transcript_entry

    def taken_before_recording(message, **kwargs):
        # Recovery gave the run to another worker while this one was answering.
        AgentRun.objects.filter(status=AgentRun.Status.RUNNING).update(worker="another-host:7")
        return entry(message, **kwargs)

    monkeypatch.setattr(execution, "transcript_entry", taken_before_recording)
    with django_capture_on_commit_callbacks(execute=True):
        run = message_intake(thread_id=thread.thread_id, user=user, content="hello").run
    run.refresh_from_db()
    assert run.status == AgentRun.Status.RUNNING and run.worker == "another-host:7"  # its new holder's
    assert not Message.objects.filter(conversation=thread, role__in=["assistant", "system"]).exists()


def test_the_next_holder_goes_on_from_the_checkpoint_and_does_nothing_twice(
    thread, user, scripted_model, django_capture_on_commit_callbacks
):
    model = scripted_model("a second answer that must not be asked for")
    run = _claimed(thread, user, worker="a-machine-that-died:4242", seconds_ago=600)
    # The lost worker's graph had taken the message and answered; it died before the transcript write.
    said = run.input_message
    repository_for(thread).update(
        {
            "messages": [
                HumanMessage(content="hello", id=said.lc_message_id),
                AIMessage(content="first", id="lc-first"),
            ]
        }
    )
    with django_capture_on_commit_callbacks(execute=True):
        report = runs_recover()
    assert report.requeued == [run.pk]
    run.refresh_from_db()
    assert run.status == AgentRun.Status.SUCCEEDED and run.attempts == 2, run.error
    assert model.calls == []  # the model was not asked again
    assert [text for _id, text in assert_transcript_equals_checkpoint(thread)] == ["first"]
    assert run_perform(run_id=run.pk) == thread.pk  # a late duplicate delivery: nothing more
    assert thread.messages.filter(role="assistant").count() == 1
