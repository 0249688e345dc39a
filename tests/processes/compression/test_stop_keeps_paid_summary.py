"""Stop after an automatic summary was paid for, while the request it made room for is out (the model
silent for 8 s): the run ends within a second, the request is closed, and the summary is kept: in the
checkpoint and on the compression card, and the next turn starts from it."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from compression.models import CompressionRecord
from context_engine.state import SUMMARY_EVENT_KEY
from conversations.models import AgentRun
from conversations.services import message_intake, run_cancel, thread_create
from tests.compression._threads import repository_for
from tests.context_engine.chats import as_summary
from tests.conversations.consistency import assert_transcript_equals_checkpoint
from tests.support.openai_stub import ScriptedReply

SILENT_SECONDS = 8.0
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


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_stop_after_a_paid_summary_keeps_the_summary(user, stub_agent, openai_stub, settings):
    settings.RUN_EXECUTION = "inprocess"
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    openai_stub.reply("Noted. " + "I will read every chapter with care. " * 60)
    first = message_intake(thread_id=thread.thread_id, user=user, content="Read my chapters.").run
    _wait(lambda: _ended(first))
    # The next turn is over T: the summary answers at once, the main call stays silent.
    openai_stub.reply(as_summary("## SESSION INTENT\nRead chapters."))
    openai_stub.reply("An answer nobody reads.", delay=SILENT_SECONDS)
    run = message_intake(thread_id=thread.thread_id, user=user, content=f"Chapter 1: {LONG}").run
    _wait(lambda: len(openai_stub.requests) == 3)  # the summary answered; the main call is out
    time.sleep(0.3)

    run_cancel(thread_id=thread.thread_id, user=user)
    took = _wait(lambda: _ended(run))

    connection.close()
    run.refresh_from_db()
    assert run.status == AgentRun.Status.CANCELLED, run.error
    assert took < STOP_WITHIN, f"the run ended {took:.2f} s after Stop"
    event = repository_for(thread).get_values().get(SUMMARY_EVENT_KEY)
    assert event is not None, "the paid summary was thrown away"
    assert "Read chapters." in str(event["summary_message"].content)
    record = CompressionRecord.objects.filter(conversation=thread).latest("created_at")
    assert record.status == CompressionRecord.Status.COMPLETED, (record.status, record.error)
    assert_transcript_equals_checkpoint(thread)

    # The thread goes on from the kept summary: the next turn's model call carries it.
    def answer(body):
        asked = str(body["messages"][-1]["content"])
        return ScriptedReply(
            content=as_summary("## SESSION INTENT\nGo on.") if "<messages>" in asked else "On."
        )

    openai_stub.responder = answer
    following = message_intake(thread_id=thread.thread_id, user=user, content="Go on.").run
    _wait(lambda: _ended(following))
    connection.close()
    following.refresh_from_db()
    assert following.status == AgentRun.Status.SUCCEEDED, following.error
    assert "Read chapters." in str(openai_stub.requests[3]["messages"])
