"""The thread page's pin control, the preview hook of "Compress context", and the loss report on the
compression card."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from compression.models import CompressionRecord
from conversations.services import message_pin
from tests.compression._threads import seed_state, transcript_for
from tests.context_engine.chats import conversation_messages

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(thread, user):
    messages = [
        HumanMessage("Always cite sources.", id="rule"),
        *conversation_messages(2, big_result_chars=200),
    ]
    seed_state(thread, messages)
    return thread, transcript_for(thread, messages)


def test_every_message_has_a_pin_control_and_a_pinned_one_says_so(owner_client, user, seeded):
    thread, rows = seeded
    message_pin(thread_id=thread.thread_id, message_id=rows["rule"], user=user)
    html = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert html.count('class="pin-toggle') == len(rows)
    assert (
        f'data-pin-url="/api/threads/{thread.thread_id}/messages/{rows["rule"]}/pin" aria-pressed="true"'
        in html
    )
    assert (
        f'data-pin-url="/api/threads/{thread.thread_id}/messages/{rows["h0"]}/pin" aria-pressed="false"'
        in html
    )
    assert 'id="compress-preview-slot"' in html and "fragments/compress-preview" in html
    fragment = owner_client.get(f"/threads/{thread.thread_id}/fragments/messages?after=0").content.decode()
    assert fragment.count('aria-pressed="true"') == 1


def test_the_page_speaks_chinese_for_pins(owner_client, seeded):
    thread, _rows = seeded
    html = owner_client.get(f"/threads/{thread.thread_id}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert ">置顶<" in html


def test_the_compression_card_shows_the_loss_report_by_reach_tier(owner_client, seeded):
    thread, _rows = seeded
    report = {
        "total": 10,
        "in_summary": 4,
        "in_view": 1,
        "one_read": 2,
        "two_reads": 2,
        "unreachable": 1,
        "lost": 3,
        "lost_identifiers": ["ABC-1234", "/srv/app/main.py"],
        "repaired": True,
    }
    CompressionRecord.objects.create(
        conversation=thread, trigger="manual", level="summary", status="completed", loss_report=report
    )
    html = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert (
        "Identifiers in what was folded: 10 — 5 still in view, 2 one read away (a saved file or the lines the view "
        "names), 2 two reads away (only in the history file), 1 unreachable." in html
    )
    assert "ABC-1234, /srv/app/main.py" in html and "A repair pass put back" in html
    # The live refresh after a compression re-reads the state fragment, which renders the same card.
    live = owner_client.get(f"/threads/{thread.thread_id}/fragments/state").content.decode()
    assert "1 unreachable" in live
    CompressionRecord.objects.create(
        conversation=thread, trigger="auto", level="compaction", status="completed", loss_report={}
    )
    nothing = owner_client.get(f"/threads/{thread.thread_id}/fragments/state").content.decode()
    assert "Identifiers in what was folded" not in nothing


def test_a_record_from_before_the_tiers_reads_its_saved_file_and_history_counts(owner_client, seeded):
    thread, _rows = seeded
    old = {"total": 9, "in_summary": 4, "in_view": 1, "in_saved_file": 2, "lost": 2, "lost_identifiers": []}
    CompressionRecord.objects.create(
        conversation=thread, trigger="manual", level="summary", status="completed", loss_report=old
    )
    html = owner_client.get(f"/threads/{thread.thread_id}/fragments/state").content.decode()
    assert "9 — 5 still in view, 2 one read away" in html
    assert "2 two reads away (only in the history file), 0 unreachable." in html
