"""Every compression ends as compacted, summarized, no change needed or could not reach the budget
(with the reason), the same in the event, the audit record and the admin list, on the automatic,
manual and bulk paths."""

from __future__ import annotations

import pytest
from django.urls import reverse
from langchain_core.messages import AIMessage, HumanMessage

from compression.models import CompressionRecord
from compression.panels import reason_text
from compression.services.records import compression_record_from_event
from context_engine import outcomes
from context_engine.config import CompressionConfig
from context_engine.middleware import CompressionMiddleware
from context_engine.store import MemoryStore
from context_engine.tokens.messages import estimate_message, profile_for_model
from conversations.models import AgentRun
from tests.compression._threads import compact, seed_state
from tests.context_engine.chats import conversation_messages
from tests.context_engine.fakes import Handler, ScriptedChatModel, conversation, make_request

PROFILE = profile_for_model(None)


def _run_auto(messages, *, trigger: int, keep: int = 20) -> dict:
    events: list[dict] = []
    middleware = CompressionMiddleware(
        config=CompressionConfig(
            trigger_tokens=trigger, keep_messages=keep, tool_result_token_limit=100, context_window=400_000
        ),
        store=MemoryStore(),
        summary_model=ScriptedChatModel(),
    )
    middleware.wrap_model_call(make_request(messages, events=events), Handler())
    return events[-1]


# --- the engine's vocabulary ----------------------------------------------------------------------


def test_outcome_of_says_how_the_request_ended_against_the_trigger():
    assert outcomes.outcome_of(folded="compaction", after_tokens=90, trigger_tokens=100) == "compacted"
    assert outcomes.outcome_of(folded="summary", after_tokens=99, trigger_tokens=100) == "summarized"
    assert outcomes.outcome_of(folded=None, after_tokens=50, trigger_tokens=100) == "no_change_needed"
    for folded in ("compaction", "summary", None):
        assert (
            outcomes.outcome_of(folded=folded, after_tokens=100, trigger_tokens=100)
            == "could_not_reach_budget"
        )


def test_the_reason_names_the_message_that_alone_exceeds_the_trigger():
    big = HumanMessage("word " * 30000)
    kept = [AIMessage("earlier"), big]
    reason = outcomes.unreachable_reason(kept, overhead_tokens=500, trigger_tokens=4096, profile=PROFILE)
    assert reason == {
        "code": "latest_message_too_large",
        "tokens": estimate_message(big, PROFILE),
        "trigger": 4096,
    }
    words = reason_text({"code": "latest_message_too_large", "tokens": 27700, "trigger": 4096})
    assert words == "the latest message alone is 27.7K tokens, above the 4.1K trigger"
    spread = outcomes.unreachable_reason(
        [HumanMessage("word " * 500)] * 3, overhead_tokens=100, trigger_tokens=1000, profile=PROFILE
    )
    assert spread["code"] == "kept_messages_too_large" and spread["messages"] == 3
    fixed = outcomes.unreachable_reason([], overhead_tokens=5000, trigger_tokens=4096, profile=PROFILE)
    assert fixed["code"] == "overhead_too_large"


# --- automatic (in a run) -------------------------------------------------------------------------


def test_auto_compaction_under_the_trigger_is_compacted():
    completed = _run_auto(conversation(4), trigger=3000)
    assert completed["level"] == "compaction" and completed["outcome"] == "compacted"
    assert "reason" not in completed


def test_auto_summary_under_the_trigger_is_summarized():
    messages = conversation(6, size=600)
    completed = _run_auto(messages, trigger=700, keep=2)
    assert completed["level"] == "summary" and completed["outcome"] == "summarized", completed
    assert completed["after_tokens"] < 700


def test_a_request_nothing_could_fold_is_flagged_with_its_reason():
    """The issue's case: one 95K-character message, 680% of the trigger, "27.7K → 27.7K"."""
    messages = [
        HumanMessage("hello", id="h0"),
        AIMessage("hi", id="a0"),
        HumanMessage("x " * 47_500, id="h1"),
    ]
    completed = _run_auto(messages, trigger=4096, keep=10)
    assert completed["status"] == "completed" and completed["outcome"] == "could_not_reach_budget"
    assert completed["after_tokens"] >= 4096
    assert completed["reason_detail"]["code"] == "latest_message_too_large"
    assert completed["reason_detail"]["trigger"] == 4096


@pytest.mark.django_db
@pytest.mark.usefixtures("keep_four")
def test_the_audit_record_of_an_automatic_compression_carries_its_outcome(thread):
    run = AgentRun.objects.create(conversation=thread, status="succeeded")
    reason = {"code": "latest_message_too_large", "tokens": 27700, "trigger": 4096}
    record = compression_record_from_event(
        run=run,
        event={
            "status": "completed",
            "level": "compaction",
            "before_tokens": 27700,
            "after_tokens": 27700,
            "outcome": "could_not_reach_budget",
            "reason_detail": reason,
        },
    )
    assert record.outcome == "could_not_reach_budget" and record.reason_detail == reason


# --- manual and bulk ------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("keep_four")
def test_manual_outcomes_summarized_and_no_change(client, user, thread):
    client.force_login(user)
    seed_state(thread, conversation_messages(1))
    body = client.post(f"/api/threads/{thread.thread_id}/compress?wait=true").json()
    assert body["status"] == "no_op" and body["outcome"] == "no_change_needed"
    assert body["reason_detail"] == {"code": "insufficient_history"}

    seed_state(thread, conversation_messages(5))
    body = client.post(f"/api/threads/{thread.thread_id}/compress?wait=true").json()
    assert body["status"] == "completed" and body["outcome"] == "summarized"
    record = CompressionRecord.objects.filter(conversation=thread).first()
    assert record.outcome == "summarized" and record.trigger == "manual"


@pytest.mark.django_db
@pytest.mark.usefixtures("keep_four")
def test_manual_compression_that_cannot_reach_the_budget_says_why(client, user, thread, agent):
    agent.summary_threshold = 1  # 1,024 tokens: the kept messages alone are above it
    agent.save()
    client.force_login(user)
    seed_state(thread, conversation_messages(5, big_result_chars=20000))
    body = client.post(f"/api/threads/{thread.thread_id}/compress?wait=true").json()
    assert body["outcome"] == "could_not_reach_budget", body
    assert body["reason_detail"]["trigger"] == 1024
    assert body["after_tokens"] >= 1024


@pytest.mark.django_db
@pytest.mark.usefixtures("keep_four")
def test_bulk_outcomes_are_recorded_and_listed_in_the_admin(client, user, thread, admin_user):
    from conversations.services.pressure import conversation_pressure_update

    seed_state(thread, conversation_messages(5))
    conversation_pressure_update(
        conversation_id=thread.pk,
        token_usage={
            "next_llm_input_tokens": 99_000,
            "summary_trigger_tokens": 102_400,
            "summary_pressure_ratio": 0.97,
        },
    )
    compact("--min-pressure", "0.5", "--idle-for", "any")
    record = CompressionRecord.objects.get(conversation=thread, trigger="bulk")
    assert record.outcome == "summarized"
    client.force_login(admin_user)
    page = client.get(reverse("admin:compression_compressionrecord_changelist")).content.decode()
    assert "Summarized" in page
    filtered = client.get(
        reverse("admin:compression_compressionrecord_changelist") + "?outcome__exact=summarized"
    )
    assert filtered.status_code == 200 and "Summarized" in filtered.content.decode()
