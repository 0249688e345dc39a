"""Manual compression events match SPEC 6.7: ``completed`` carries ``cutoff_index`` and the summary
call's usage as the automatic path's does, and a no-op is a ``completed`` event with its outcome."""

from __future__ import annotations

import pytest

from compression.panels import compression_card
from compression.selectors import compression_latest
from context_engine.outcomes import NO_CHANGE as OUTCOME_NO_CHANGE
from context_engine.outcomes import SUMMARIZED as OUTCOME_SUMMARIZED
from tests.compression._threads import repository_for, seed_state
from tests.context_engine.chats import conversation_messages
from tests.context_engine.fakes import ScriptedChatModel

pytestmark = pytest.mark.django_db


@pytest.fixture
def compress(client, user, agent, monkeypatch, django_capture_on_commit_callbacks):
    """Compress a thread seeded with ``n`` turns; returns (the thread, its compression events)."""
    from conversations.services import thread_create

    agent.summary_keep_messages = 4
    agent.save()
    model = ScriptedChatModel(
        summaries=["## SESSION INTENT\nKeep context small."],
        summary_usage={"input_tokens": 120, "output_tokens": 12, "total_tokens": 132},
    )
    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
    sent: list[dict] = []
    monkeypatch.setattr("conversations.events._send", lambda thread_id, event, **_kw: sent.append(event))
    client.force_login(user)

    def run(turns: int):
        thread = thread_create(user=user, agent_slug=agent.slug)
        seed_state(thread, conversation_messages(turns))
        with django_capture_on_commit_callbacks(execute=True):
            assert client.post(f"/api/threads/{thread.thread_id}/compress?wait=true").status_code == 200
        return thread, [e for e in sent if e["type"] == "compression"]

    return run


def test_a_manual_summary_completes_with_the_automatic_paths_fields(compress):
    thread, events = compress(5)
    assert [e["status"] for e in events] == ["started", "completed"]
    completed = events[-1]
    stored = repository_for(thread).get_values()["_summarization_event"]
    assert completed["cutoff_index"] == stored["cutoff_index"] > 0
    assert completed["summary_usage"]["input_tokens"] == 120
    assert completed["outcome"] == OUTCOME_SUMMARIZED
    assert {"level", "before_tokens", "after_tokens", "compressed_messages", "file_path"} <= completed.keys()


def test_a_manual_no_op_is_a_completed_event_with_its_outcome(compress):
    thread, events = compress(1)
    assert [e["status"] for e in events] == ["started", "completed"]
    completed = events[-1]
    assert completed["outcome"] == OUTCOME_NO_CHANGE and completed["reason"] == "insufficient_history"
    assert completed["before_tokens"] == completed["after_tokens"]
    assert completed["reason_detail"] == {"code": "insufficient_history"}
    # The page's card (built from the audit record) says the same.
    card = compression_card(compression_latest(conversation=thread))
    assert card.status == "completed" and card.outcome == OUTCOME_NO_CHANGE
