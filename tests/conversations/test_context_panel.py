"""The thread page's context panels: the compression card (outcomes, receipts, files, undo), the
memory panel (what the model works from), and undo from the page. The meter's states are in
test_pressure_meter.py."""

from __future__ import annotations

import pytest
from django.urls import reverse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from compression.models import CompressionRecord
from conversations.services import NewMessage, message_append
from tests.compression._threads import seed_state
from tests.context_engine.chats import conversation_messages
from tests.conversations.page_support import usage_at, write_token_usage

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("keep_four")]


def _detail(thread) -> str:
    return reverse("conversations:thread-detail", kwargs={"thread_id": thread.thread_id})


def _state(thread) -> str:
    return reverse("conversations:fragment-state", kwargs={"thread_id": thread.thread_id})


def _file(thread, path: str) -> str:
    return reverse("conversations:workdir-file", kwargs={"thread_id": thread.thread_id, "path": path})


def _section(html: str, element_id: str) -> str:
    start = html.index(f'id="{element_id}"')
    return html[start : html.index("</section>", start)]


def _seed_thread(thread, turns: int = 4) -> list:
    """A checkpoint of ``turns`` tool rounds, and the same messages in the transcript (same ids)."""
    messages = conversation_messages(turns)
    seed_state(thread, messages)
    for message in messages:
        if isinstance(message, ToolMessage):
            role, extra = "tool", {"tool_call_id": message.tool_call_id, "tool_name": message.name}
        elif isinstance(message, AIMessage):
            role, extra = "assistant", {"tool_calls": message.tool_calls}
        else:
            role, extra = "user", {}
        message_append(
            conversation=thread,
            message=NewMessage(role=role, content=message.content, lc_message_id=message.id, **extra),
        )
    return messages


# --- the card ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "label"),
    [
        ("compacted", "Compacted"),
        ("summarized", "Summarized"),
        ("no_change_needed", "No change needed"),
        ("could_not_reach_budget", "Could not reach the budget"),
    ],
)
@pytest.mark.parametrize("trigger", ["auto", "manual", "bulk"])
def test_the_card_shows_each_outcome_of_each_path(owner_client, thread, outcome, label, trigger):
    reason = (
        {"code": "latest_message_too_large", "tokens": 27700, "trigger": 4096}
        if outcome == "could_not_reach_budget"
        else {}
    )
    CompressionRecord.objects.create(
        conversation=thread,
        trigger=trigger,
        level="summary" if outcome == "summarized" else "compaction",
        status="no_op" if outcome == "no_change_needed" else "completed",
        outcome=outcome,
        reason_detail=reason,
        before_tokens=4440,
        after_tokens=3970 if outcome != "no_change_needed" else 4440,
    )
    card = _section(owner_client.get(_detail(thread)).content.decode(), "compression-status")
    assert f'data-outcome="{outcome}"' in card
    assert label in card
    if outcome == "no_change_needed":
        assert "nothing was folded; the request stayed at 4.44K tokens" in card
    else:
        assert "the request went from 4.44K to 3.97K tokens" in card
    if outcome == "could_not_reach_budget":
        assert "the latest message alone is 27.7K tokens, above the 4.1K trigger" in card
        assert "sent above the trigger" in card
    else:
        assert "sent above the trigger" not in card
    # The card is an event in time, never mistaken for the current size.
    assert "At " in card and "Compression completed" not in card


def test_the_card_links_the_history_file_and_every_saved_result(owner_client, thread):
    saved = [
        "outputs/large_tool_results/query_kb-0123456789abcdef.txt",
        "outputs/large_tool_results/web_search-fedcba9876543210.txt",
    ]
    CompressionRecord.objects.create(
        conversation=thread,
        trigger="auto",
        level="summary",
        status="completed",
        outcome="summarized",
        before_tokens=9000,
        after_tokens=2000,
        compressed_messages=12,
        file_path="outputs/conversation_history/session_1.md",
        saved_files=saved,
    )
    card = _section(owner_client.get(_detail(thread)).content.decode(), "compression-status")
    assert f'href="{_file(thread, "outputs/conversation_history/session_1.md")}"' in card
    for path in saved:
        assert f'href="{_file(thread, path)}"' in card
    assert "2 tool results saved to files" in card and "12 messages were folded into the summary" in card


def test_an_undo_reads_undone_at_with_its_figures_not_as_a_compression(owner_client, thread):
    CompressionRecord.objects.create(
        conversation=thread, trigger="undo", status="completed", before_tokens=2360, after_tokens=3360
    )
    card = _section(owner_client.get(_detail(thread)).content.decode(), "compression-status")
    assert 'data-kind="undo"' in card and "Undone at" in card
    assert "from 2.36K to 3.36K tokens" in card
    assert "Compression completed" not in card and "undo-button" not in card


def test_a_failed_compression_says_nothing_changed(owner_client, thread):
    CompressionRecord.objects.create(
        conversation=thread, trigger="manual", level="summary", status="failed", error="<b>boom</b>"
    )
    card = _section(owner_client.get(_detail(thread)).content.decode(), "compression-status")
    assert "Compression failed" in card and "&lt;b&gt;boom&lt;/b&gt;" in card
    assert "Nothing was changed" in card


def test_the_card_and_the_meter_come_in_one_state_fragment(owner_client, thread):
    write_token_usage(thread, usage_at(0.5))
    CompressionRecord.objects.create(
        conversation=thread, trigger="manual", level="summary", status="completed", outcome="summarized"
    )
    html = owner_client.get(_state(thread)).content.decode()
    for element in ("state-panel", "compression-status", "memory-panel", "run-status"):
        assert f'id="{element}"' in html


# --- the memory panel ----------------------------------------------------------------------------


def test_without_a_summary_the_memory_panel_says_the_model_sees_everything(owner_client, thread):
    _seed_thread(thread, turns=2)
    panel = _section(owner_client.get(_detail(thread)).content.decode(), "memory-panel")
    assert 'data-summary="false"' in panel
    assert "The model sees the whole conversation (8 messages); nothing is summarized." in panel


def test_before_the_model_has_read_anything_the_memory_panel_claims_nothing_about_the_transcript(
    owner_client, thread
):
    # Transcript rows without a checkpoint (e.g. imported): the panel must not say nothing was said.
    message_append(conversation=thread, message=NewMessage(role="user", content="hello"))
    panel = _section(owner_client.get(_detail(thread)).content.decode(), "memory-panel")
    assert 'data-summary="false"' in panel
    assert "Nothing is summarized: the model sees the whole conversation." in panel
    assert "has not started" not in panel


def test_after_a_summary_the_memory_panel_shows_it_its_file_and_what_it_stands_for(
    owner_client, user, thread
):
    _seed_thread(thread, turns=4)  # 16 messages; 4 kept after the summary
    response = owner_client.post(f"/api/threads/{thread.thread_id}/compress?wait=true")
    assert response.status_code == 200, response.content
    body = response.json()
    html = owner_client.get(_detail(thread)).content.decode()
    panel = _section(html, "memory-panel")
    assert 'data-summary="true"' in panel
    assert "stands for 12 transcript messages (#1–#12)" in panel
    assert "followed by the 4 messages after it, word for word" in panel
    # The summary the model reads, in full, as Markdown and without its model-facing wrapper (issue 26.7).
    assert "<h2>SESSION INTENT</h2>" in panel and "&lt;summary&gt;" not in panel
    assert f'href="{_file(thread, body["file_path"])}"' in panel
    # and the card of that compression offers its undo
    card = _section(html, "compression-status")
    assert 'id="undo-button"' in card and "Undo this summary" in card
    assert "The model will read the 12 messages it stands for in full again" in card


# --- undo from the page --------------------------------------------------------------------------


def test_undo_from_the_page_restores_the_history_and_the_card_says_so(owner_client, user, thread):
    _seed_thread(thread, turns=4)
    compressed = owner_client.post(f"/api/threads/{thread.thread_id}/compress?wait=true").json()
    page = owner_client.get(_detail(thread)).content.decode()
    undo_url = f"/api/threads/{thread.thread_id}/compress/undo"
    assert f'data-undo-api-url="{undo_url}"' in page  # what the card's button calls
    response = owner_client.post(undo_url)
    assert response.status_code == 200, response.content
    html = owner_client.get(_detail(thread)).content.decode()
    card = _section(html, "compression-status")
    assert "Undone at" in card and "undo-button" not in card
    record = CompressionRecord.objects.filter(conversation=thread).first()
    assert record.trigger == "undo"
    assert record.before_tokens == compressed["after_tokens"]  # the figures chain: no jump
    assert 'data-summary="false"' in _section(html, "memory-panel")
    # The meter shows the restored size: the card's "after" is the meter's figure.
    assert f'data-tokens="{record.after_tokens}"' in html


def test_the_undo_button_is_disabled_under_the_compress_buttons_busy_rule(owner_client, user, thread):
    from conversations.models import AgentRun

    _seed_thread(thread, turns=4)
    owner_client.post(f"/api/threads/{thread.thread_id}/compress?wait=true")
    AgentRun.objects.create(conversation=thread, status=AgentRun.Status.RUNNING)
    card = _section(owner_client.get(_detail(thread)).content.decode(), "compression-status")
    assert 'id="undo-button" class="secondary" disabled' in " ".join(card.split())
    response = owner_client.post(f"/api/threads/{thread.thread_id}/compress/undo")
    assert response.status_code == 409


def test_only_a_summary_can_be_undone_from_the_card(owner_client, thread):
    messages = [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")]
    seed_state(thread, messages, _summary_events=[None])
    CompressionRecord.objects.create(
        conversation=thread, trigger="auto", level="compaction", status="completed", outcome="compacted"
    )
    card = _section(owner_client.get(_detail(thread)).content.decode(), "compression-status")
    assert "undo-button" not in card
