"""Issue 26, item 2: Stop during an automatic summary stops everything. With the real OpenAI client
against the local OpenAI-protocol stub: the summary call in flight is abandoned, no request reaches the
server after Stop (neither the main call nor a fallback), nothing is applied, and the card says the
compression was stopped, in words."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.urls import reverse

from compression.models import CompressionRecord
from context_engine.events import STOPPED_BY_USER
from context_engine.state import SUMMARY_EVENT_KEY
from conversations.models import AgentRun
from conversations.services import message_intake, run_cancel, thread_create
from tests.compression._threads import repository_for
from tests.context_engine.chats import as_summary
from tests.conversations.consistency import assert_transcript_equals_checkpoint

SUMMARY_DELAY = 4.0  # the summary model's answer takes this long: Stop comes while it is in flight
STOP_WITHIN = 1.0
LONG = "the quick brown fox jumps over the lazy dog " * 150  # over T = 1,024 tokens alone


def _wait(predicate, timeout: float = 30.0) -> float:
    began = time.monotonic()
    while not predicate():
        assert time.monotonic() - began < timeout, "timed out"
        time.sleep(0.02)
    return time.monotonic() - began


def _ended(run: AgentRun) -> bool:
    return not AgentRun.objects.filter(pk=run.pk, status__in=("queued", "running")).exists()


@pytest.fixture
def stub_agent(stub_agent_with):
    return stub_agent_with(summary_threshold=1, summary_keep_messages=2)


@pytest.mark.parametrize("event_lost", [False, True], ids=["event relayed", "event lost with the stream"])
@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_stop_during_an_automatic_summary_ends_the_run_and_no_request_follows(
    client, user, stub_agent, openai_stub, settings, monkeypatch, event_lost
):
    if event_lost:  # the stream Stop closes may drop the middleware's last event: the run still tells it
        monkeypatch.setattr("context_engine.middleware.emitter.Emitter.stop", lambda self: None)
    settings.RUN_EXECUTION = "inprocess"
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    openai_stub.reply("Noted. " + "I will read every chapter with care. " * 60)
    first = message_intake(thread_id=thread.thread_id, user=user, content="Read my chapters.").run
    _wait(lambda: _ended(first))
    # The next turn is over T: the summary is asked for first, and answers slowly; the main call's
    # reply is scripted too, so a request sent after Stop would be answered (and counted), not refused.
    openai_stub.reply(as_summary("## SESSION INTENT\nRead chapters."), delay=SUMMARY_DELAY)
    openai_stub.reply("This reply must never be asked for.")
    run = message_intake(thread_id=thread.thread_id, user=user, content=f"Chapter 1: {LONG}").run
    _wait(lambda: len(openai_stub.requests) == 2)
    assert "<messages>" in openai_stub.requests[-1]["messages"][-1]["content"]  # the summary call

    run_cancel(thread_id=thread.thread_id, user=user)
    took = _wait(lambda: _ended(run))
    time.sleep(SUMMARY_DELAY + 1.0)  # the abandoned summary call has answered meanwhile

    connection.close()
    run.refresh_from_db()
    assert run.status == AgentRun.Status.CANCELLED, run.error
    assert took < STOP_WITHIN, f"the run ended {took:.2f} s after Stop"
    assert len(openai_stub.requests) == 2  # no main call, no fallback: nothing after Stop
    assert SUMMARY_EVENT_KEY not in repository_for(thread).get_values()  # nothing applied
    assert_transcript_equals_checkpoint(thread)

    record = CompressionRecord.objects.filter(conversation=thread).latest("created_at")
    assert record.status == CompressionRecord.Status.FAILED and record.reason == "stopped"
    assert record.error == STOPPED_BY_USER

    client.force_login(user)
    page = client.get(reverse("conversations:fragment-state", args=[thread.thread_id])).content.decode()
    assert "Compression stopped" in page
    assert "Compression failed" not in page and "RunCancelled" not in page


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_stop_during_an_automatic_summary_on_a_celery_worker_sends_nothing_after_it(
    user, stub_agent, openai_stub, tmp_path, settings
):
    from tests.processes.support import celery_worker, tasks_sent_to

    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    openai_stub.reply("Noted. " + "I will read every chapter with care. " * 60)
    openai_stub.reply(as_summary("## SESSION INTENT\nRead chapters."), delay=SUMMARY_DELAY)
    openai_stub.reply("This reply must never be asked for.")
    settings.RUN_EXECUTION = "celery"
    with celery_worker(tmp_path, STUB_API_KEY="sk-test") as worker, tasks_sent_to(worker.queue):
        first = message_intake(thread_id=thread.thread_id, user=user, content="Read my chapters.").run
        _wait(lambda: _ended(first), timeout=90)
        run = message_intake(thread_id=thread.thread_id, user=user, content=f"Chapter 1: {LONG}").run
        _wait(lambda: len(openai_stub.requests) == 2, timeout=60)
        run_cancel(thread_id=thread.thread_id, user=user)
        took = _wait(lambda: _ended(run))
        time.sleep(SUMMARY_DELAY + 1.0)
        run.refresh_from_db()
        assert run.status == AgentRun.Status.CANCELLED, worker.text()[-3000:]
    assert took < STOP_WITHIN, f"the run ended {took:.2f} s after Stop"
    assert len(openai_stub.requests) == 2
    record = CompressionRecord.objects.filter(conversation=thread).latest("created_at")
    assert record.status == CompressionRecord.Status.FAILED and record.reason == "stopped"
