"""Run execution: transcript, interrupts and resume, failures, FIFO chaining, live events, sub-agents."""

from __future__ import annotations

import json
from typing import NotRequired

import pytest
from langchain.agents import AgentState
from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse
from langchain_core.messages import AIMessage
from langgraph.config import get_stream_writer
from langgraph.types import Command

from conversations.models import AgentRun, Message
from conversations.services import message_intake, run_execute, run_resume

pytestmark = [pytest.mark.django_db, pytest.mark.services]


@pytest.fixture
def sent_events(monkeypatch):
    """Every event broadcast to a thread group, in order."""
    sent: list[dict] = []
    monkeypatch.setattr("conversations.events._send", lambda thread_id, event: sent.append(event))
    return sent


def _say(thread, user, content, capture):
    with capture(execute=True):
        return message_intake(thread_id=thread.thread_id, user=user, content=content)


def test_ask_user_interrupts_the_run_and_resume_completes_it(
    thread, user, django_capture_on_commit_callbacks, sent_events
):
    first = _say(thread, user, "ask me what to do", django_capture_on_commit_callbacks)
    first.run.refresh_from_db()
    assert first.run.status == AgentRun.Status.INTERRUPTED, first.run.error
    question = next(e for e in sent_events if e["type"] == "run.status" and e["status"] == "interrupted")[
        "question"
    ]
    assert "what would you like me to do" in question

    with django_capture_on_commit_callbacks(execute=True):
        resumed = run_resume(thread_id=thread.thread_id, user=user, answer="paint it blue")
    resumed.run.refresh_from_db()
    assert resumed.run.kind == AgentRun.Kind.RESUME
    assert resumed.run.status == AgentRun.Status.SUCCEEDED, resumed.run.error
    transcript = list(thread.messages.values_list("role", "tool_name", "content"))
    assert [row[:2] for row in transcript] == [
        ("user", ""),
        ("assistant", ""),  # the ask_user call
        ("user", ""),  # the answer, as the user typed it
        ("tool", "ask_user"),
        ("assistant", ""),
    ]
    assert transcript[3][2] == "paint it blue"
    assert "paint it blue" in transcript[4][2]


def test_a_plain_message_answers_a_pending_question(thread, user, django_capture_on_commit_callbacks):
    _say(thread, user, "ask me something", django_capture_on_commit_callbacks)
    answer = _say(thread, user, "green", django_capture_on_commit_callbacks)
    answer.run.refresh_from_db()
    assert answer.run.status == AgentRun.Status.SUCCEEDED
    tool_result = thread.messages.get(role=Message.Role.TOOL)
    assert (tool_result.tool_name, tool_result.content) == ("ask_user", "green")


def test_tool_calls_and_results_are_appended_to_the_transcript(
    thread, user, django_capture_on_commit_callbacks
):
    result = _say(thread, user, "list files please", django_capture_on_commit_callbacks)
    result.run.refresh_from_db()
    assert result.run.status == AgentRun.Status.SUCCEEDED, result.run.error
    call, tool_result = thread.messages.filter(role__in=["assistant", "tool"]).order_by("seq")[:2]
    assert call.tool_calls[0]["name"] == "ls"
    assert tool_result.tool_call_id == call.tool_calls[0]["id"]
    assert tool_result.lc_message_id and call.lc_message_id
    assert list(thread.messages.values_list("seq", flat=True)) == [1, 2, 3, 4]


def test_tokens_and_lifecycle_are_broadcast(thread, user, django_capture_on_commit_callbacks, sent_events):
    _say(thread, user, "hello", django_capture_on_commit_callbacks)
    statuses = [e["status"] for e in sent_events if e["type"] == "run.status"]
    assert statuses == ["queued", "running", "succeeded"]
    tokens = "".join(e["text"] for e in sent_events if e["type"] == "run.token")
    assert tokens == thread.messages.get(role="assistant").content
    created = [e["message"]["role"] for e in sent_events if e["type"] == "message.created"]
    assert created == ["user", "assistant"]


def test_a_failing_model_fails_the_run_with_a_clear_error_and_the_next_run_still_starts(
    thread, user, scripted_model, django_capture_on_commit_callbacks, sent_events
):
    scripted_model(RuntimeError("upstream exploded"), "second answer")
    with django_capture_on_commit_callbacks(execute=True):
        first = message_intake(thread_id=thread.thread_id, user=user, content="one")
        second = message_intake(thread_id=thread.thread_id, user=user, content="two")
    first.run.refresh_from_db()
    second.run.refresh_from_db()
    assert first.run.status == AgentRun.Status.FAILED
    assert "upstream exploded" in first.run.error_detail and "upstream exploded" not in first.run.error
    assert second.run.status == AgentRun.Status.SUCCEEDED
    assert thread.messages.filter(role="assistant").get().content == "second answer"
    failed = next(e for e in sent_events if e.get("status") == "failed")
    assert failed["error"] == first.run.error  # the plain words; the detail stays with the run


def test_runs_execute_in_fifo_order(thread, user, scripted_model, django_capture_on_commit_callbacks):
    model = scripted_model("a1", "a2", "a3")
    with django_capture_on_commit_callbacks(execute=True):
        runs = [message_intake(thread_id=thread.thread_id, user=user, content=f"q{i}").run for i in (1, 2, 3)]
    assert [call[-1].content for call in model.calls] == ["q1", "q2", "q3"]
    contents = list(thread.messages.order_by("seq").values_list("content", flat=True))
    assert contents == ["q1", "q2", "q3", "a1", "a2", "a3"] or contents == [
        "q1",
        "a1",
        "q2",
        "a2",
        "q3",
        "a3",
    ]
    started = [AgentRun.objects.get(pk=r.pk).started_at for r in runs]
    assert started == sorted(started)


def test_executing_a_run_twice_is_a_no_op(thread, user, scripted_model, django_capture_on_commit_callbacks):
    model = scripted_model("only once")
    result = _say(thread, user, "hi", django_capture_on_commit_callbacks)
    run_execute(run_id=result.run.pk)
    assert len(model.calls) == 1
    assert thread.messages.filter(role="assistant").count() == 1


class _EmittingMiddleware(AgentMiddleware):
    """Stands in for the compression and token-usage middleware: custom events plus a state update."""

    def wrap_model_call(self, request, handler):
        writer = get_stream_writer()
        writer({"type": "compression", "status": "started", "level": "compaction", "before_tokens": 900})
        writer(
            {
                "type": "compression",
                "status": "completed",
                "level": "compaction",
                "before_tokens": 900,
                "after_tokens": 120,
            }
        )
        return handler(request)

    async def awrap_model_call(self, request, handler):  # pragma: no cover - sync path under test
        return await handler(request)


def test_custom_compression_events_are_recorded_and_relayed(
    thread, user, monkeypatch, django_capture_on_commit_callbacks, sent_events
):
    monkeypatch.setattr("agent_platform.runtime.graph.agent_middleware", lambda **kw: [_EmittingMiddleware()])
    result = _say(thread, user, "hello", django_capture_on_commit_callbacks)
    result.run.refresh_from_db()
    assert [(e["type"], e["status"]) for e in result.run.events] == [
        ("compression", "started"),
        ("compression", "completed"),
    ]
    relayed = [e for e in sent_events if e["type"] == "compression"]
    assert relayed[1] == {
        "type": "compression",
        "status": "completed",
        "level": "compaction",
        "before_tokens": 900,
        "after_tokens": 120,
    }


def test_task_delegates_to_a_sub_agent_and_returns_its_answer(
    thread, user, scripted_model, django_capture_on_commit_callbacks, sent_events
):
    delegate = AIMessage(
        "", tool_calls=[{"name": "task", "args": {"description": "count to three"}, "id": "t1"}]
    )
    model = scripted_model(delegate, "one two three", "The sub-agent says: one two three")
    result = _say(thread, user, "delegate counting", django_capture_on_commit_callbacks)
    result.run.refresh_from_db()
    assert result.run.status == AgentRun.Status.SUCCEEDED, result.run.error
    assert thread.messages.get(role="tool", tool_name="task").content == "one two three"
    assert model.calls[1][-1].content == "count to three"  # the sub-agent saw only its task
    tokens = "".join(e["text"] for e in sent_events if e["type"] == "run.token")
    assert "one two three" not in tokens.replace("The sub-agent says: one two three", "")


def test_a_resume_run_is_fed_to_the_graph_as_a_command(thread, user, monkeypatch):
    from conversations.services.execution import _RunRelay

    run = AgentRun(conversation=thread, kind=AgentRun.Kind.RESUME, resume_value="yes")
    payload = _RunRelay(run)._input(pending_interrupt=True)
    assert isinstance(payload, Command) and payload.resume == "yes"


class _UsageState(AgentState):
    token_usage: NotRequired[dict]


class _TokenUsageMiddleware(AgentMiddleware):
    """Stands in for the token-usage middleware: writes ``token_usage`` into state after each call."""

    state_schema = _UsageState

    def wrap_model_call(self, request, handler):
        usage = {"next_llm_input_tokens": 870, "summary_trigger_tokens": 1000, "summary_pressure_ratio": 0.87}
        return ExtendedModelResponse(
            model_response=handler(request),
            command=Command(update={"token_usage": {**usage, "summary_active": False}}),
        )

    async def awrap_model_call(self, request, handler):  # pragma: no cover - sync path under test
        return await handler(request)


def test_token_usage_from_the_checkpoint_reaches_state_events_the_thread_and_get_state(
    thread, user, bearer, client, monkeypatch, django_capture_on_commit_callbacks, sent_events
):
    monkeypatch.setattr(
        "agent_platform.runtime.graph.agent_middleware", lambda **kw: [_TokenUsageMiddleware()]
    )
    _say(thread, user, "hello", django_capture_on_commit_callbacks)
    state_events = [e for e in sent_events if e["type"] == "state"]
    assert state_events and state_events[-1]["token_usage"]["summary_pressure_ratio"] == 0.87
    thread.refresh_from_db()
    assert (thread.context_tokens, thread.trigger_tokens, thread.pressure_ratio) == (870, 1000, 0.87)
    body = client.get(f"/api/threads/{thread.thread_id}/state", headers=bearer).json()
    assert body["token_usage"]["next_llm_input_tokens"] == 870
    assert body["latest_run"]["status"] == "succeeded"


def test_a_knowledge_question_goes_through_query_kb(thread, user, django_capture_on_commit_callbacks):
    from agent_platform.knowledge.models import KnowledgeBase
    from agent_platform.knowledge.services import document_ingest

    kb = KnowledgeBase.objects.create(name="Policies", slug="policies")
    document_ingest(kb=kb, title="Refunds", text="Refunds are paid within 14 days.")
    result = _say(thread, user, "search the knowledge base for refunds", django_capture_on_commit_callbacks)
    result.run.refresh_from_db()
    assert result.run.status == AgentRun.Status.SUCCEEDED, result.run.error
    tool_result = thread.messages.get(role="tool")
    assert tool_result.tool_name == "query_kb"
    assert json.loads(tool_result.content)["query"]
    assert "Searching the knowledge base" in thread.messages.filter(role="assistant").last().content


def test_a_tool_result_with_nul_characters_is_kept_in_the_transcript(thread):
    from conversations.services import NewMessage, message_append

    message = message_append(
        conversation=thread,
        message=NewMessage(
            role="tool",
            content="binary\x00output",
            tool_calls=[{"name": "x", "args": {"q": "a\x00b"}}],
            tool_name="web\x00search",
        ),
    )
    message.refresh_from_db()
    assert message.content == "binary\ufffdoutput"
    assert message.tool_calls == [{"name": "x", "args": {"q": "a\ufffdb"}}]
    assert message.tool_name == "web\ufffdsearch"


def test_a_second_run_sends_whole_pressure_figures_not_reducer_deltas(
    thread, user, django_capture_on_commit_callbacks, sent_events
):
    """The token-usage middleware resets ``run`` with a partial update at each run's start; what the
    pages and the thread's pressure columns get is the merged value, as in the checkpoint."""
    _say(thread, user, "hello", django_capture_on_commit_callbacks)
    sent_events.clear()
    _say(thread, user, "hello again", django_capture_on_commit_callbacks)
    state_events = [e for e in sent_events if e["type"] == "state"]
    assert state_events
    assert all(e["token_usage"].get("summary_pressure_ratio") is not None for e in state_events)
    thread.refresh_from_db()
    assert thread.pressure_ratio == state_events[-1]["token_usage"]["summary_pressure_ratio"]


def test_on_celery_a_run_is_sent_as_its_id_after_commit_and_a_redelivery_does_nothing(
    thread, user, settings, monkeypatch, django_capture_on_commit_callbacks
):
    from conversations.tasks import run_execute_task

    settings.RUN_EXECUTION = "celery"
    sent: list[int] = []
    monkeypatch.setattr(run_execute_task, "delay", lambda run_id: sent.append(run_id))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        result = message_intake(thread_id=thread.thread_id, user=user, content="hello")
    assert sent == []  # nothing leaves before the intake commits
    for callback in callbacks:
        callback()
    assert sent == [result.run.pk]
    assert run_execute_task.acks_late is True

    run_execute_task.apply(args=[result.run.pk])  # what a worker does with the message
    result.run.refresh_from_db()
    assert result.run.status == "succeeded"
    replies = Message.objects.filter(conversation=thread, role="assistant").count()
    run_execute_task.apply(args=[result.run.pk])  # a redelivery (acks_late) after success
    result.run.refresh_from_db()
    assert result.run.status == "succeeded"
    assert Message.objects.filter(conversation=thread, role="assistant").count() == replies
