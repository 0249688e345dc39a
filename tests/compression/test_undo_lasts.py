"""Issue 26, item 4: undo lasts as long as the summary. With the real OpenAI client against the local
OpenAI-protocol stub: turns that show the model the same saved result again are not new compressions
(one record, no card each turn), and the summary's undo stays offered after later compressions took
the card, until it is used."""

from __future__ import annotations

import pytest

from compression.models import CompressionRecord
from context_engine.formats import RECEIPT_HEADER
from context_engine.state import SUMMARY_EVENT_KEY
from conversations.services import thread_create
from tests.compression._threads import repository_for, say, seed_state, state_fragment
from tests.context_engine.chats import SUMMARY, conversation_messages

pytestmark = pytest.mark.django_db

LONG = "the quick brown fox jumps over the lazy dog " * 150  # over T = 1,024 tokens alone


@pytest.fixture
def stub_agent(stub_agent_with):
    return stub_agent_with(summary_threshold=1, summary_keep_messages=2, tools=[])


def _memory_panel(page: str) -> str:
    return page[page.index('id="memory-panel"') :]


def test_the_same_saved_result_shown_again_is_no_new_compression(
    user, stub_agent, openai_stub, django_capture_on_commit_callbacks
):
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    seed_state(thread, conversation_messages(1))  # one large tool result: above T until it is saved
    for n in range(4):
        openai_stub.reply(f"Reply {n}.")
        run = say(user, thread, f"Continue {n}.", django_capture_on_commit_callbacks)
        statuses = [e["status"] for e in run.events if e.get("type") == "compression"]
        assert statuses == (["started", "completed"] if n == 0 else []), n
    # Every request showed the model the receipt, not the result; only the first saved it.
    assert all(RECEIPT_HEADER in str(request["messages"]) for request in openai_stub.requests)
    [record] = CompressionRecord.objects.filter(conversation=thread)
    assert record.outcome == "compacted" and len(record.saved_files) == 1


def test_undo_stays_offered_until_the_summary_is_superseded(
    client, user, stub_agent, openai_stub, django_capture_on_commit_callbacks
):
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    seed_state(thread, conversation_messages(5))
    client.force_login(user)
    openai_stub.reply(SUMMARY)
    assert client.post(f"/api/threads/{thread.thread_id}/compress?wait=true").status_code == 200
    page = state_fragment(client, thread)
    assert page.count('id="undo-button"') == 1 and 'id="undo-button"' not in _memory_panel(page)

    # A later automatic summary fails: the card now tells that, and the undo moves beside the summary.
    openai_stub.error(400, {"error": {"message": "bad request", "type": "invalid_request_error"}})
    openai_stub.reply("Noted.")
    say(user, thread, f"Chapter 1: {LONG}", django_capture_on_commit_callbacks)
    assert CompressionRecord.objects.filter(conversation=thread).latest("created_at").status == "failed"
    page = state_fragment(client, thread)
    assert page.count('id="undo-button"') == 1 and 'id="undo-button"' in _memory_panel(page)

    response = client.post(f"/api/threads/{thread.thread_id}/compress/undo")
    assert response.status_code == 200, response.content
    assert repository_for(thread).get_values().get(SUMMARY_EVENT_KEY) is None
    assert 'id="undo-button"' not in state_fragment(client, thread)
