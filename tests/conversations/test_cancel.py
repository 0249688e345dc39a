"""Stop: a running run ends ``cancelled`` keeping what it streamed, the checkpoint stays consistent, the
queue goes on; a queued run is dropped from the queue; the API operations and their errors."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk

from conversations import run_signals
from conversations.models import AgentRun, Message
from conversations.services import message_intake, run_cancel, run_execute
from conversations.services.closing import EARLIER_ATTEMPT_STOPPED, NOT_EXECUTED
from tests.conversations.conftest import ScriptedChatModel

pytestmark = pytest.mark.services


class HaltingModel(ScriptedChatModel):
    """Streams the first ``halt_after`` words of its first reply, then waits for ``resume``."""

    halt_after: int = 3
    halted: Any = None
    resume: Any = None

    def _stream(self, messages, stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        first_call = not self.calls
        reply = self._next(messages)
        words = reply.text.split(" ")
        for index, word in enumerate(words):
            if first_call and index == self.halt_after:
                self.halted.set()
                assert self.resume.wait(10), "the test never let the model go on"
            yield ChatGenerationChunk(message=AIMessageChunk(content=word + " "))


@pytest.fixture
def halting_model(monkeypatch):
    def install(*script: Any) -> HaltingModel:
        model = HaltingModel(
            script=list(script), calls=[], halted=threading.Event(), resume=threading.Event()
        )
        monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
        return model

    return install


def _wait_until(predicate, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _checkpoint_messages(thread) -> list:
    from agent_platform.runtime.graph import state_graph_for
    from agent_platform.runtime.state_repository import AgentStateRepository

    return AgentStateRepository(state_graph_for(thread), thread.thread_id).get_values().get("messages", [])


def _idle(thread) -> bool:
    return not AgentRun.objects.filter(conversation=thread, status__in=AgentRun.ACTIVE_STATUSES).exists()


@pytest.mark.django_db(transaction=True)
def test_stop_keeps_the_streamed_text_marks_it_interrupted_and_the_queued_message_runs_next(
    thread, user, settings, halting_model
):
    settings.RUN_EXECUTION = "inprocess"
    model = halting_model("one two three four five six seven", "second answer")
    first = message_intake(thread_id=thread.thread_id, user=user, content="first")
    assert model.halted.wait(10)
    # What a reload shows: the text streamed so far.
    _wait_until(lambda: run_signals.stream_text(run_id=first.run.pk) == "one two three ")
    second = message_intake(thread_id=thread.thread_id, user=user, content="second")

    stopping = run_cancel(thread_id=thread.thread_id, user=user)
    assert (stopping.pk, stopping.status) == (first.run.pk, "running")
    assert stopping.cancel_requested_at is not None
    model.resume.set()
    _wait_until(lambda: _idle(thread))
    connection.close()

    first.run.refresh_from_db()
    second.run.refresh_from_db()
    assert (first.run.status, second.run.status) == ("cancelled", "succeeded")
    assert first.run.finished_at <= second.run.started_at
    interrupted = Message.objects.get(conversation=thread, run=first.run, role="assistant")
    assert interrupted.interrupted is True
    # The model call ended on the first token after Stop: the rest of the reply was never taken.
    assert interrupted.content == "one two three "
    assert run_signals.stream_text(run_id=first.run.pk) == ""
    # The model saw the first exchange, partial reply included, before the queued message.
    seen = model.calls[-1]
    assert [type(m) for m in seen[-3:]] == [HumanMessage, AIMessage, HumanMessage]
    assert seen[-2].content == interrupted.content
    assert seen[-1].content == "second"
    roles = list(thread.messages.order_by("seq").values_list("role", "content"))
    assert roles[-1] == ("assistant", "second answer ")


@pytest.mark.django_db
def test_a_tool_call_left_open_by_stop_gets_a_result_in_checkpoint_and_transcript(
    thread, user, scripted_model, django_capture_on_commit_callbacks
):
    from agent_platform.runtime.graph import state_graph_for
    from agent_platform.runtime.state_repository import AgentStateRepository

    scripted_model("after the stop")
    repository = AgentStateRepository(state_graph_for(thread), thread.thread_id)
    repository.update(
        {
            "messages": [
                HumanMessage("list my files", id="h1"),
                AIMessage("", id="a1", tool_calls=[{"id": "call-1", "name": "ls", "args": {}}]),
            ]
        }
    )
    with django_capture_on_commit_callbacks(execute=False):
        result = message_intake(thread_id=thread.thread_id, user=user, content="never mind")
    AgentRun.objects.filter(pk=result.run.pk).update(status="running")
    run_cancel(thread_id=thread.thread_id, user=user)
    AgentRun.objects.filter(pk=result.run.pk).update(status="queued")  # let the executor claim it

    run_execute(run_id=result.run.pk)

    result.run.refresh_from_db()
    assert result.run.status == "cancelled"
    messages = _checkpoint_messages(thread)
    closing = [m for m in messages if isinstance(m, ToolMessage)]
    # The call was left open before this run started, so the run's start answers it (an earlier
    # attempt stopped); Stop then finds nothing open. Exactly one result, never a dangling call.
    answered = NOT_EXECUTED.format(reason=EARLIER_ATTEMPT_STOPPED)
    assert [(m.tool_call_id, m.content) for m in closing] == [("call-1", answered)]
    assert messages.index(closing[0]) == 2  # right after the call it answers
    # The call was in the checkpoint only (its worker died before recording it): the transcript gets
    # the call and its answer too, through the same message path, so both stores say the same.
    recorded = Message.objects.filter(conversation=thread, role__in=["assistant", "tool"]).order_by("seq")
    assert [(m.role, m.lc_message_id, m.content) for m in recorded] == [
        ("assistant", "a1", ""),
        ("tool", "not-executed-call-1", answered),
    ]


@pytest.mark.django_db
def test_cancelling_a_queued_message_removes_it_from_the_queue(
    thread, user, scripted_model, django_capture_on_commit_callbacks
):
    model = scripted_model("only answer")
    with django_capture_on_commit_callbacks(execute=False):
        dropped = message_intake(thread_id=thread.thread_id, user=user, content="forget this")
    cancelled = run_cancel(thread_id=thread.thread_id, user=user, run_id=dropped.run.pk)
    assert cancelled.status == "cancelled"
    with django_capture_on_commit_callbacks(execute=True):
        kept = message_intake(thread_id=thread.thread_id, user=user, content="this one")
    kept.run.refresh_from_db()
    assert kept.run.status == "succeeded"
    assert [m.content for m in model.calls[-1] if isinstance(m, HumanMessage)] == ["this one"]


@pytest.mark.django_db
def test_cancel_api_answers_202_then_409_when_nothing_runs_and_404_for_a_foreign_run(
    thread, user, owner_client, django_capture_on_commit_callbacks, other_user_thread_run
):
    base = f"/api/threads/{thread.thread_id}/runs"
    response = owner_client.post(f"{base}/current/cancel")
    assert response.status_code == 409
    assert response.json()["code"] == "run_not_active"

    with django_capture_on_commit_callbacks(execute=False):
        queued = message_intake(thread_id=thread.thread_id, user=user, content="queued")
    response = owner_client.post(f"{base}/{queued.run.pk}/cancel")
    assert response.status_code == 202
    assert response.json()["status"] == "cancelled"
    assert owner_client.post(f"{base}/{queued.run.pk}/cancel").json()["code"] == "run_not_active"
    assert owner_client.post(f"{base}/{other_user_thread_run}/cancel").status_code == 404


@pytest.fixture
def other_user_thread_run(agent, django_user_model):
    from conversations.services import thread_create

    other = django_user_model.objects.create_user("mallory", password="pw-mallory-123")
    thread = thread_create(user=other, agent_slug=agent.slug)
    return AgentRun.objects.create(conversation=thread).pk
