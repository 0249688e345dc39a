"""A failed turn is visible (page, transcript) and leaves the thread usable: the next message works and
the checkpoint never keeps a tool call without its result."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from agent_platform.workdir import Workdir
from conversations.models import AgentRun
from conversations.services import message_intake
from conversations.services.closing import dangling_tool_answers
from tests.compression._threads import repository_for
from tests.conversations.consistency import assert_transcript_equals_checkpoint

pytestmark = pytest.mark.django_db


def _send(thread, user, content, capture):
    with capture(execute=True):
        run = message_intake(thread_id=thread.thread_id, user=user, content=content).run
    run.refresh_from_db()
    return run


def _unanswered_calls(thread) -> list[str]:
    messages = repository_for(thread).get_values()["messages"]
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    return [call for call in calls if call not in answered]


def test_a_model_error_fails_the_turn_visibly_and_the_next_message_works(
    thread, user, scripted_model, owner_client, django_capture_on_commit_callbacks
):
    scripted_model(RuntimeError("Error code: 500 - upstream exploded"), "back again")

    failed = _send(thread, user, "first", django_capture_on_commit_callbacks)

    assert failed.status == AgentRun.Status.FAILED
    assert failed.error_detail == "RuntimeError: Error code: 500 - upstream exploded"  # for the admin
    notice = thread.messages.get(role="system")
    assert notice.run_id == failed.pk
    assert notice.content == f"This turn failed: {failed.error}"
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert "This turn failed: Something went wrong on the platform's side." in page
    assert "RuntimeError" not in page and "upstream exploded" not in page
    transcript = owner_client.get(f"/api/threads/{thread.thread_id}/messages").json()
    assert [m["role"] for m in transcript] == ["user", "system"]

    again = _send(thread, user, "second", django_capture_on_commit_callbacks)
    assert (again.status, again.error) == (AgentRun.Status.SUCCEEDED, "")
    assert thread.messages.order_by("-seq").first().content == "back again"


def test_a_tool_that_raises_leaves_no_dangling_call_and_the_next_model_call_is_valid(
    thread, user, scripted_model, monkeypatch, django_capture_on_commit_callbacks
):
    call = AIMessage(content="", tool_calls=[{"id": "call_ls", "name": "ls", "args": {"path": "."}}])
    model = scripted_model(call, "recovered")

    def disk_gone(self, path="."):
        raise RuntimeError("disk gone")

    with monkeypatch.context() as patch:
        patch.setattr(Workdir, "list_dir", disk_gone)
        failed = _send(thread, user, "list my files", django_capture_on_commit_callbacks)

    assert failed.status == AgentRun.Status.FAILED and "disk gone" in failed.error_detail
    assert _unanswered_calls(thread) == []
    # A cut-off write (S3 gone mid-call) answers the call in the transcript too, not only the checkpoint.
    answers = [text for _id, text in assert_transcript_equals_checkpoint(thread) if "Not executed" in text]
    assert len(answers) == 1 and "disk gone" in answers[0]

    again = _send(thread, user, "try again", django_capture_on_commit_callbacks)
    assert again.status == AgentRun.Status.SUCCEEDED, again.error
    seen = model.calls[-1]  # what the model was given on the next turn
    results = [m for m in seen if isinstance(m, ToolMessage) and m.tool_call_id == "call_ls"]
    assert len(results) == 1 and "Not executed" in results[0].content and "disk gone" in results[0].content


def test_dangling_tool_answers_answers_only_the_unanswered_calls_of_the_last_ai_message():
    ai = AIMessage(
        content="", tool_calls=[{"id": "a", "name": "ls", "args": {}}, {"id": "b", "name": "ls", "args": {}}]
    )
    done = ToolMessage(content="ok", tool_call_id="a", name="ls")
    answers = dangling_tool_answers([ai, done], reason="stopped")
    assert [(m.tool_call_id, m.content) for m in answers] == [("b", "[Not executed: stopped]")]
    assert dangling_tool_answers([ai, done, *answers], reason="stopped") == []
    assert dangling_tool_answers([AIMessage(content="plain")], reason="stopped") == []
