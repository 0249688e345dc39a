"""A compression never makes the request bigger (issue 24 invariant 2), through the API and the bulk
command with the real OpenAI client against the local OpenAI-protocol stub: a summary that would not
be smaller than what it folds is not applied, the outcome says so, and only the billed call is kept."""

from __future__ import annotations

import pytest

from compression.models import CompressionRecord
from context_engine.state import SUMMARY_CALLS_KEY, SUMMARY_EVENT_KEY
from conversations.models import Conversation
from tests.compression._threads import compact, repository_for, seed_state, workdir_files
from tests.context_engine.chats import SUMMARY, conversation_messages

pytestmark = pytest.mark.django_db
# Bigger than what it folds, about it, and no loop (a looping answer is refused: issue 37).
LONG_SUMMARY = (
    SUMMARY
    + "\n"
    + " ".join(f"Question {n}: document {n} says compression keeps context small." for n in range(300))
)


@pytest.fixture
def small_thread(user, stub_agent_with):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=stub_agent_with().slug)
    seed_state(thread, conversation_messages(4, big_result_chars=40))  # a short thread: ~30% pressure
    return thread


def _history_files(thread) -> list[str]:
    return [p for p in workdir_files(thread) if p.startswith("outputs/conversation_history/")]


def test_a_manual_compression_whose_summary_is_bigger_changes_nothing_and_says_so(
    client, user, small_thread, openai_stub
):
    openai_stub.reply(LONG_SUMMARY)
    before = repository_for(small_thread).get_values()
    client.force_login(user)

    response = client.post(f"/api/threads/{small_thread.thread_id}/compress?wait=true")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "no_op" and body["reason"] == "summary_not_smaller"
    assert body["outcome"] == "no_change_needed" and body["after_tokens"] == body["before_tokens"]
    assert body["reason_detail"]["code"] == "summary_not_smaller"
    assert body["reason_detail"]["tokens"] >= body["reason_detail"]["folded"]
    assert len(openai_stub.requests) == 1  # the summary was asked for, through the real client
    after = repository_for(small_thread).get_values()
    assert SUMMARY_EVENT_KEY not in after and after["messages"] == before["messages"]
    assert len(after[SUMMARY_CALLS_KEY]) == 1  # the provider billed the call: the spend guard counts it
    assert _history_files(small_thread) == []
    record = CompressionRecord.objects.get(conversation=small_thread)
    assert record.status == "no_op" and record.outcome == "no_change_needed"


def test_a_bulk_run_never_reports_a_bigger_thread_as_compressed(small_thread, openai_stub, settings):
    # No saving floor: the thread is tried, so the never-bigger rule is what keeps it as it was (with the
    # default floor it is skipped before any call: tests/compression/test_bulk_report_words.py).
    settings.BULK_MIN_SAVING_FACTOR = 0
    openai_stub.reply(LONG_SUMMARY)
    Conversation.objects.filter(pk=small_thread.pk).update(pressure_ratio=0.3)

    report = compact("--min-pressure", "0.1", "--idle", "0s")

    assert report["compressed"] == 0 and report["no_op"] == 1
    assert SUMMARY_EVENT_KEY not in repository_for(small_thread).get_values()
    [record] = CompressionRecord.objects.filter(conversation=small_thread, trigger="bulk")
    assert record.status == "no_op" and (record.reason_detail or {}).get("code") == "summary_not_smaller"


def test_a_summary_smaller_than_what_it_folds_is_applied(client, user, small_thread, openai_stub):
    openai_stub.reply(SUMMARY)
    client.force_login(user)

    body = client.post(f"/api/threads/{small_thread.thread_id}/compress?wait=true").json()

    assert body["status"] == "completed" and body["after_tokens"] < body["before_tokens"]
    assert SUMMARY_EVENT_KEY in repository_for(small_thread).get_values()
