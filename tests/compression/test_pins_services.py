"""Pinning across manual and bulk compression, successive summaries, unpinning and undo; the spend
guard and the loss report on the service paths."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from langchain_core.messages import HumanMessage

from compression.models import CompressionRecord
from compression.services import conversation_compress, thread_compress, thread_compress_undo
from context_engine.state import SUMMARY_CALLS_KEY, SUMMARY_EVENT_KEY
from context_engine.summary.history import effective_messages
from conversations.services import message_pin, message_unpin, thread_create
from tests.compression._threads import repository_for, seed_state, transcript_for
from tests.context_engine.chats import conversation_messages
from tests.context_engine.fakes import ScriptedChatModel

pytestmark = [pytest.mark.django_db, pytest.mark.services]
RULE = "Use metric units only; ticket OPS-4711."


@pytest.fixture
def summarizer(monkeypatch):
    model = ScriptedChatModel(summaries=["## SESSION INTENT\nRead documents about compression."])
    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
    return model


@pytest.fixture
def pinned_thread(user, agent):
    agent.summary_keep_messages = 4
    agent.save()
    thread = thread_create(user=user, agent_slug=agent.slug)
    messages = [HumanMessage(RULE, id="rule"), *conversation_messages(5)]
    seed_state(thread, messages)
    rows = transcript_for(thread, messages)
    message_pin(thread_id=thread.thread_id, message_id=rows["rule"], user=user)
    return thread, rows


def _visible(thread) -> list:
    values = repository_for(thread).get_values()
    return effective_messages(values["messages"], values.get(SUMMARY_EVENT_KEY))


def _grow(thread, first_turn: int) -> None:
    """More conversation after a compression (what the next runs would add)."""
    repository_for(thread).update({"messages": conversation_messages(first_turn + 4)[first_turn * 4 :]})


def test_manual_compression_keeps_the_pin_verbatim_after_the_summary(user, pinned_thread, summarizer):
    thread, _rows = pinned_thread
    result = thread_compress(thread_id=thread.thread_id, user=user).result
    assert result["status"] == "completed" and result["pinned_messages"] == 1
    visible = _visible(thread)
    assert visible[1].id == "rule" and visible[1].content == RULE
    assert RULE not in summarizer.summary_prompts[0]
    record = CompressionRecord.objects.get(conversation=thread)
    assert record.loss_report["total"] > 0 and record.loss_report == result["loss_report"]


def test_bulk_compression_keeps_the_pin(pinned_thread, summarizer):
    thread, _rows = pinned_thread
    outcome = conversation_compress(conversation_id=thread.pk, trigger=CompressionRecord.Trigger.BULK)
    assert outcome.result["pinned_messages"] == 1
    assert _visible(thread)[1].id == "rule"


def test_a_pin_survives_successive_compressions_and_unpinning_folds_it_at_the_next(
    user, pinned_thread, summarizer
):
    thread, rows = pinned_thread
    thread_compress(thread_id=thread.thread_id, user=user)
    _grow(thread, 5)
    thread_compress(thread_id=thread.thread_id, user=user)
    assert [m.id for m in _visible(thread)[1:2]] == ["rule"]
    assert all(RULE not in prompt for prompt in summarizer.summary_prompts)

    message_unpin(thread_id=thread.thread_id, message_id=rows["rule"], user=user)
    assert _visible(thread)[1].id == "rule"  # still in view until the next compression
    _grow(thread, 9)
    thread_compress(thread_id=thread.thread_id, user=user)
    assert "rule" not in [m.id for m in _visible(thread)]
    assert RULE in summarizer.summary_prompts[-1]  # folded into the summary now


def test_undo_restores_the_previous_summary_with_its_pins(user, pinned_thread, summarizer):
    thread, _rows = pinned_thread
    thread_compress(thread_id=thread.thread_id, user=user)
    first = [m.id for m in _visible(thread)]
    _grow(thread, 5)
    thread_compress(thread_id=thread.thread_id, user=user)
    thread_compress_undo(thread_id=thread.thread_id, user=user)
    restored = [m.id for m in _visible(thread)]
    assert restored[1] == "rule" and restored[: len(first)] == first  # the first summary's view, grown
    undo = CompressionRecord.objects.filter(trigger=CompressionRecord.Trigger.UNDO).get()
    assert undo.loss_report["lost"] == 0  # every record carries a loss report


def test_the_spend_guard_turns_a_manual_compression_into_a_no_op_that_says_why(
    user, pinned_thread, summarizer
):
    thread, _rows = pinned_thread
    agent = thread.agent
    agent.summary_max_calls_per_hour = 1
    agent.save()
    recent = (timezone.now() - timedelta(minutes=10)).isoformat()
    repository_for(thread).update({SUMMARY_CALLS_KEY: [{"at": recent, "input_tokens": 500}]})

    result = thread_compress(thread_id=thread.thread_id, user=user).result

    assert result["status"] == "no_op" and result["reason"] == "spend_guard"
    assert result["spend_guard"]["reason"] == "summary_calls_per_hour" and result["spend_guard"]["retry_at"]
    assert summarizer.summary_prompts == []
    assert SUMMARY_EVENT_KEY not in repository_for(thread).get_values()
    record = CompressionRecord.objects.get(conversation=thread)
    assert record.reason == "spend_guard" and record.spend_guard["calls_in_window"] == 1


def test_manual_summaries_enter_the_spend_ledger(user, pinned_thread, summarizer):
    thread, _rows = pinned_thread
    thread_compress(thread_id=thread.thread_id, user=user)
    ledger = repository_for(thread).get_values()[SUMMARY_CALLS_KEY]
    assert len(ledger) == 1 and ledger[0]["input_tokens"] > 0
