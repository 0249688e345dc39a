"""On the manual path a summary that is an error's text is refused: the folded messages' extractive
summary is applied instead (issue 37), labelled with the refusal; the error's text reaches no message,
and the provider's words stay out of what the user reads."""

from __future__ import annotations

import pytest

from compression.models import CompressionRecord
from context_engine.state import SUMMARY_CALLS_KEY, SUMMARY_EVENT_KEY
from tests.compression._threads import repository_for, seed_state, workdir_files
from tests.context_engine.chats import conversation_messages
from tests.context_engine.fakes import ScriptedChatModel
from tests.context_engine.summary.test_error_texts import LANGCHAIN_429


@pytest.mark.django_db
def test_manual_compression_refuses_an_error_as_summary_and_applies_the_extractive_one(
    client, user, agent, monkeypatch, django_capture_on_commit_callbacks
):
    from conversations.services import thread_create

    agent.summary_keep_messages = 4
    agent.save()
    thread = thread_create(user=user, agent_slug=agent.slug)
    model = ScriptedChatModel(summaries=[LANGCHAIN_429])
    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
    sent: list[dict] = []
    monkeypatch.setattr("conversations.events._send", lambda thread_id, event, **_kw: sent.append(event))
    seed_state(thread, conversation_messages(5))
    client.force_login(user)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/threads/{thread.thread_id}/compress?wait=true")

    assert response.status_code == 200, response.content
    report = response.json()["loss_report"]
    assert (
        report["summary_kind"] == "extractive" and "error instead of a summary" in report["refusal"]["reason"]
    )
    after = repository_for(thread).get_values()
    assert "rate_limit_exceeded" not in after[SUMMARY_EVENT_KEY]["summary_message"].content
    assert len(after[SUMMARY_CALLS_KEY]) == 1  # the provider billed the call
    record = CompressionRecord.objects.get(conversation=thread)
    assert record.status == "completed" and record.loss_report["summary_kind"] == "extractive"
    statuses = [e["status"] for e in sent if e["type"] == "compression"]
    assert statuses == ["started", "completed"]
    assert len([path for path in workdir_files(thread) if "conversation_history" in path]) == 1
