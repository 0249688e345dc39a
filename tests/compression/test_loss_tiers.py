"""The loss report's reach tiers through the API (issue 24): a manual compression's response and its
record say, for the identifiers of what was folded, how far a reader of the model's view is from each."""

from __future__ import annotations

import pytest

from compression.models import CompressionRecord
from context_engine.compaction.tool_results import sha256_text, tool_result_path, tool_result_text
from context_engine.summary.identifiers import TIERS
from tests.compression._threads import compress_request, seed_state
from tests.context_engine.chats import as_summary, conversation_messages

pytestmark = pytest.mark.django_db


def _tiers(report: dict) -> dict[str, int]:
    return {tier: report[tier] for tier in TIERS}


def _without_index(thread) -> None:
    """The tiers as the summary alone leaves them (the reference index, issue 25, is tested below)."""
    thread.agent.summary_index_percent = 0
    thread.agent.save()


def test_the_response_and_the_record_report_what_the_view_can_reach(client, user, thread, summarizer):
    messages = conversation_messages(5)
    doc0 = next(m for m in messages if m.id == "t0")
    saved0 = tool_result_path("query_kb", sha256_text(tool_result_text(doc0.content)))
    # The summary keeps one URL itself and names the saved file of another; it names neither the rest.
    summarizer(as_summary(f"## SESSION INTENT\nRead https://example.com/doc/1; doc 0 is in {saved0}."))
    _without_index(thread)
    seed_state(thread, messages)
    client.force_login(user)

    body = compress_request(client, thread).json()

    assert body["status"] == "completed", body
    report = body["loss_report"]
    assert report["total"] == sum(_tiers(report).values()) >= 3
    assert report["in_summary"] >= 1  # doc/1
    assert report["one_read"] >= 1  # doc/0, in the saved file the summary names
    assert report["two_reads"] >= 1  # the other folded URLs: only in the history file
    assert report["unreachable"] == 0  # the summary message names the history file
    assert "https://example.com/doc/0" not in report["lost_identifiers"]
    assert "https://example.com/doc/2" in report["lost_identifiers"]
    assert report["lost"] == report["two_reads"] + report["unreachable"]
    record = CompressionRecord.objects.get(conversation=thread)
    assert _tiers(record.loss_report) == _tiers(report)
    assert record.loss.one_read == report["one_read"]


def test_a_saved_file_nothing_in_view_names_is_not_one_read(client, user, thread, summarizer):
    summarizer(as_summary("## SESSION INTENT\nRead documents about compression."))
    _without_index(thread)
    seed_state(thread, conversation_messages(5))
    client.force_login(user)

    report = compress_request(client, thread).json()["loss_report"]

    # Every folded tool result was saved to a file, but neither the summary nor the kept tail names one.
    assert report["one_read"] == 0
    assert report["two_reads"] == report["total"] - report["in_summary"] - report["in_view"] > 0
    assert report["unreachable"] == 0


def test_with_the_reference_index_what_the_summary_leaves_out_is_in_view(client, user, thread, summarizer):
    summarizer(as_summary("## SESSION INTENT\nRead documents about compression."))
    seed_state(thread, conversation_messages(5))
    client.force_login(user)

    report = compress_request(client, thread).json()["loss_report"]

    # The same fold as above: the index lists, with their lines, what only the history file held.
    assert report["in_view"] == report["indexed"] > 0
    assert report["two_reads"] == report["unreachable"] == 0
    record = CompressionRecord.objects.get(conversation=thread)
    assert record.loss_report["indexed"] == report["indexed"]
