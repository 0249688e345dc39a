"""Manual compression through the API: results, errors, idempotency, undo, audit records."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import AIMessage

from compression.engine.history import SUMMARY_EVENT_KEY, effective_messages
from compression.models import CompressionRecord
from conversations.models import AgentRun, Conversation
from tests.compression._agent_fakes import ScriptedChatModel
from tests.compression._threads import conversation_messages, repository_for, seed_state, workdir_files

pytestmark = pytest.mark.django_db


@pytest.fixture
def thread(user, agent):
    from conversations.services import thread_create

    agent.summary_keep_messages = 4
    agent.save()
    return thread_create(user=user, agent_slug=agent.slug, title="Long thread")


@pytest.fixture
def summarizer(monkeypatch):
    """The agent's model, scripted: ``summarizer(*summaries)`` returns the fake to inspect."""

    def install(*summaries) -> ScriptedChatModel:
        model = ScriptedChatModel(summaries=list(summaries) or ["## SESSION INTENT\nKeep context small."])
        monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
        return model

    return install


def _compress(client, thread, **headers):
    return client.post(f"/api/threads/{thread.thread_id}/compress", headers=headers)


def test_compression_summarizes_history_and_keeps_every_message(client, user, thread, summarizer):
    model = summarizer("## SESSION INTENT\nRead documents about compression.")
    messages = conversation_messages(5)
    repository = seed_state(thread, messages)
    client.force_login(user)

    response = _compress(client, thread)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "completed"
    assert body["compressed_messages"] > 0
    assert body["after_tokens"] < body["before_tokens"]
    assert body["file_path"].startswith("outputs/conversation_history/session_")
    assert len(model.summary_prompts) == 1

    values = repository_for(thread).get_values()
    assert [(m.id, m.content) for m in values["messages"]] == [(m.id, m.content) for m in messages]
    event = values[SUMMARY_EVENT_KEY]
    assert event["file_path"] == body["file_path"]
    assert "Read documents about compression." in event["summary_message"].content
    visible = effective_messages(values["messages"], event)
    assert visible[0].content == event["summary_message"].content
    assert visible[0].additional_kwargs == {"lc_source": "summarization"}
    assert [m.id for m in visible[1:]] == [m.id for m in messages[event["cutoff_index"] :]]
    assert repository.get_values()["_summary_events"] == [None]

    from agent_platform.workdir import workdir_for

    history = workdir_for(thread).read_text(body["file_path"])
    assert "Question 0" in history

    record = CompressionRecord.objects.get(conversation=thread)
    assert (record.trigger, record.status, record.level) == ("manual", "completed", "summary")
    assert record.file_path == body["file_path"]
    assert record.requested_by == user


def test_token_usage_is_refreshed_so_the_meter_falls(client, user, thread, summarizer):
    summarizer()
    seed_state(
        thread,
        conversation_messages(5),
        token_usage={
            "next_llm_input_tokens": 99_000,
            "summary_pressure_ratio": 0.97,
            "llm_input_tokens": 98_000,
            "last_call_usage": {"input_tokens": 1},
            "system_tokens": 40,
            "tools_tokens": 300,
        },
    )
    client.force_login(user)
    body = _compress(client, thread).json()

    usage = repository_for(thread).get_values()["token_usage"]
    assert usage["compression"] == body
    assert usage["summary_active"] is True
    assert "llm_input_tokens" not in usage and "last_call_usage" not in usage
    assert usage["next_llm_input_tokens"] == 340 + body["after_tokens"]
    assert usage["summary_pressure_ratio"] < 0.97
    thread.refresh_from_db()
    assert thread.summary_active is True
    assert thread.pressure_ratio == usage["summary_pressure_ratio"]


def test_insufficient_history_is_a_no_op_that_writes_nothing(client, user, thread, summarizer):
    model = summarizer()
    messages = conversation_messages(1)  # 4 messages, all kept
    seed_state(thread, messages)
    before = repository_for(thread).get_values()
    client.force_login(user)

    response = _compress(client, thread)

    assert response.status_code == 200
    assert response.json()["status"] == "no_op"
    assert response.json()["reason"] == "insufficient_history"
    assert model.summary_prompts == []
    assert repository_for(thread).get_values() == before
    assert workdir_files(thread) == []
    assert CompressionRecord.objects.get(conversation=thread).status == "no_op"


@pytest.mark.parametrize("summary", [RuntimeError("model exploded"), "   "])
def test_summary_failure_answers_502_and_leaves_the_checkpoint_unchanged(
    client, user, thread, summarizer, summary
):
    summarizer(summary)
    seed_state(thread, conversation_messages(5))
    before = repository_for(thread).get_values()
    client.force_login(user)

    response = _compress(client, thread)

    assert response.status_code == 502
    assert response.json()["code"] == "summary_failed"
    assert set(response.json()) == {"code", "message"}  # no internal ids in the body
    after = repository_for(thread).get_values()
    assert after == before
    assert SUMMARY_EVENT_KEY not in after
    assert all("exploded" not in str(m.content) for m in after["messages"])
    record = CompressionRecord.objects.get(conversation=thread)
    assert record.status == "failed" and record.error


def test_history_write_failure_answers_502_with_state_unchanged(
    client, user, thread, summarizer, monkeypatch
):
    from compression.engine.store import StoreError

    summarizer()
    seed_state(thread, conversation_messages(5))
    before = repository_for(thread).get_values()

    def refuse(self, path, content):
        raise StoreError("disk full")

    monkeypatch.setattr("agent_platform.workdir.Workdir.append_text", refuse)
    client.force_login(user)
    response = _compress(client, thread)
    assert response.status_code == 502
    assert "history" in response.json()["message"]
    assert repository_for(thread).get_values() == before


def test_idempotent_retry_makes_exactly_one_summary_call(client, user, thread, summarizer):
    model = summarizer()
    seed_state(thread, conversation_messages(5))
    client.force_login(user)

    first = _compress(client, thread, **{"Idempotency-Key": "key-1"})
    second = _compress(client, thread, **{"Idempotency-Key": "key-1"})

    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert len(model.summary_prompts) == 1
    assert CompressionRecord.objects.filter(conversation=thread).count() == 1


def test_same_idempotency_key_on_another_thread_conflicts(client, user, agent, thread, summarizer):
    from conversations.services import thread_create

    summarizer()
    other = thread_create(user=user, agent_slug=agent.slug)
    seed_state(thread, conversation_messages(5))
    seed_state(other, conversation_messages(5))
    client.force_login(user)

    assert _compress(client, thread, **{"Idempotency-Key": "shared"}).status_code == 200
    response = _compress(client, other, **{"Idempotency-Key": "shared"})
    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_conflict"


def test_undo_restores_the_previous_effective_messages_exactly(client, user, thread, summarizer):
    summarizer("first summary", "second summary")
    repository = seed_state(thread, conversation_messages(5))
    client.force_login(user)
    assert _compress(client, thread).json()["status"] == "completed"
    repository.update({"messages": conversation_messages(8)[20:]})  # the thread grew
    after_first = repository.get_values()
    view_after_first = effective_messages(after_first["messages"], after_first[SUMMARY_EVENT_KEY])
    assert _compress(client, thread).json()["status"] == "completed"

    response = client.post(f"/api/threads/{thread.thread_id}/compress/undo")

    assert response.status_code == 200, response.content
    restored = repository.get_values()
    view = effective_messages(restored["messages"], restored[SUMMARY_EVENT_KEY])
    assert [(type(m), m.content) for m in view] == [(type(m), m.content) for m in view_after_first]

    assert client.post(f"/api/threads/{thread.thread_id}/compress/undo").status_code == 200
    raw = repository.get_values()
    assert raw.get(SUMMARY_EVENT_KEY) is None
    assert effective_messages(raw["messages"], None) == raw["messages"]

    response = client.post(f"/api/threads/{thread.thread_id}/compress/undo")
    assert response.status_code == 409
    assert response.json()["code"] == "nothing_to_undo"


def test_second_compression_stores_the_global_cutoff(client, user, thread, summarizer):
    summarizer("one", "two")
    repository = seed_state(thread, conversation_messages(5))
    client.force_login(user)
    _compress(client, thread)
    first_cutoff = repository.get_values()[SUMMARY_EVENT_KEY]["cutoff_index"]
    repository.update({"messages": conversation_messages(8)[20:]})
    body = _compress(client, thread).json()
    event = repository.get_values()[SUMMARY_EVENT_KEY]
    assert event["cutoff_index"] == first_cutoff + body["compressed_messages"] - 1


@pytest.mark.parametrize("status", ["running", "queued", "interrupted"])
def test_busy_thread_is_409_and_never_queued(client, user, thread, summarizer, status):
    model = summarizer()
    seed_state(thread, conversation_messages(5))
    AgentRun.objects.create(conversation=thread, status=status)
    client.force_login(user)

    response = _compress(client, thread)

    assert response.status_code == 409
    assert response.json()["code"] == "thread_busy"
    assert model.summary_prompts == []
    assert AgentRun.objects.filter(conversation=thread).count() == 1


def test_an_answered_interrupt_no_longer_blocks(client, user, thread, summarizer):
    summarizer()
    seed_state(thread, conversation_messages(5))
    AgentRun.objects.create(conversation=thread, status="interrupted")
    AgentRun.objects.create(conversation=thread, status="succeeded", kind="resume")
    client.force_login(user)
    assert _compress(client, thread).status_code == 200


@pytest.mark.parametrize("case", ["missing", "deleted", "foreign"])
def test_not_found_kinds_are_404_without_existence_leak(client, user, other_user, thread, summarizer, case):
    summarizer()
    thread_id = thread.thread_id
    if case == "missing":
        thread_id = uuid.uuid4()
    elif case == "deleted":
        Conversation.objects.filter(pk=thread.pk).update(status="deleted")
    client.force_login(other_user if case == "foreign" else user)

    response = client.post(f"/api/threads/{thread_id}/compress")

    assert response.status_code == 404
    assert response.json() == {"code": "thread_not_found", "message": "No such thread."}


def test_agent_without_the_capability_is_422(client, user, thread, summarizer):
    summarizer()
    thread.agent.capabilities = []
    thread.agent.save()
    client.force_login(user)
    response = _compress(client, thread)
    assert response.status_code == 422
    assert response.json()["code"] == "capability_missing"


def test_bearer_clients_can_compress(client, user, thread, summarizer, bearer):
    summarizer()
    seed_state(thread, conversation_messages(5))
    assert client.post(f"/api/threads/{thread.thread_id}/compress", headers=bearer).status_code == 200


def test_bad_idempotency_key_is_422(client, user, thread):
    client.force_login(user)
    response = _compress(client, thread, **{"Idempotency-Key": "x" * 201})
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input"


@pytest.mark.parametrize("key", ["", "   ", "a\x00b", "line\nbreak", "tab\there"])
def test_empty_or_unprintable_idempotency_key_is_422_and_compresses_nothing(
    client, user, thread, summarizer, key
):
    model = summarizer()
    seed_state(thread, conversation_messages(5))
    client.force_login(user)
    response = _compress(client, thread, **{"Idempotency-Key": key})
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input"
    assert model.summary_prompts == [] and not CompressionRecord.objects.exists()


def test_state_repository_refuses_a_graph_without_checkpointer(thread):
    from agent_platform.runtime.graph import build_agent_graph
    from agent_platform.runtime.state_repository import AgentStateRepository

    graph = build_agent_graph(agent=thread.agent, conversation=thread, checkpointer=None)
    with pytest.raises(ValueError, match="checkpointer"):
        AgentStateRepository(graph, thread.thread_id)


def test_automatic_compressions_leave_audit_records(user, agent, django_capture_on_commit_callbacks):
    """A run whose state is over the budget compresses itself and the run's events are audited."""
    from conversations.services import message_intake, thread_create

    agent.summary_threshold = 1  # T = 1024 tokens
    agent.summary_keep_messages = 2
    agent.tools = []
    agent.save()
    thread = thread_create(user=user, agent_slug=agent.slug)
    seed_state(thread, conversation_messages(3, big_result_chars=3000))

    with django_capture_on_commit_callbacks(execute=True):
        message_intake(thread_id=thread.thread_id, user=user, content="Please continue.")

    run = AgentRun.objects.get(conversation=thread)
    assert run.status == "succeeded", run.error
    statuses = [e["status"] for e in run.events if e.get("type") == "compression"]
    assert statuses[:1] == ["started"] and statuses[-1] == "completed"
    record = CompressionRecord.objects.get(conversation=thread, trigger="auto")
    assert record.run == run and record.status == "completed"
    assert record.level in ("compaction", "summary")


def test_summary_model_is_the_agents_own(client, user, thread, monkeypatch):
    """The service summarizes with ``chat_model_for(<the thread's agent>)``, the agent's own model."""
    from agent_platform.runtime import models

    assert callable(models.chat_model_for)
    assert isinstance(models.chat_model_for(thread.agent).invoke("hi"), AIMessage)

    asked_for: list = []
    model = ScriptedChatModel(summaries=["## SESSION INTENT\nsummarized by the agent's model"])
    monkeypatch.setattr(models, "chat_model_for", lambda agent: asked_for.append(agent) or model)
    seed_state(thread, conversation_messages(5))
    client.force_login(user)
    assert _compress(client, thread).status_code == 200
    assert asked_for == [thread.agent]
    event = repository_for(thread).get_values()[SUMMARY_EVENT_KEY]
    assert "summarized by the agent's model" in event["summary_message"].content


def test_manual_compression_tells_the_threads_pages_and_marks_it_under_way(
    client, user, thread, summarizer, django_capture_on_commit_callbacks
):
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from conversations.events import thread_group
    from conversations.selectors import thread_compressing

    seen_during: list[bool] = []
    model = summarizer()
    original = model._generate

    def generate(messages, stop=None, run_manager=None, **kwargs):
        seen_during.append(thread_compressing(thread_id=thread.thread_id))
        return original(messages, stop=stop, run_manager=run_manager, **kwargs)

    object.__setattr__(model, "_generate", generate)
    seed_state(thread, conversation_messages(5))
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(thread_group(thread.thread_id), channel)
    client.force_login(user)

    with django_capture_on_commit_callbacks(execute=True):
        body = _compress(client, thread).json()

    async def drain() -> list[dict]:
        import asyncio

        events = []
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=1)
            except TimeoutError:
                return events
            events.append(message["event"])

    received = async_to_sync(drain)()
    assert [e["status"] for e in received] == ["started", "completed"]
    assert all({"level", "before_tokens", "after_tokens"} <= set(e) for e in received)  # SPEC 6.7 fields
    assert received[-1]["after_tokens"] == body["after_tokens"]
    assert seen_during == [True]
    assert thread_compressing(thread_id=thread.thread_id) is False
    assert client.get(f"/api/threads/{thread.thread_id}/state").json()["compressing"] is False


@pytest.mark.parametrize("status", ["running", "queued", "interrupted"])
def test_undo_on_a_busy_thread_is_409_and_changes_nothing(client, user, thread, summarizer, status):
    summarizer()
    repository = seed_state(thread, conversation_messages(5))
    client.force_login(user)
    assert _compress(client, thread).json()["status"] == "completed"
    before = repository.get_values()
    AgentRun.objects.create(conversation=thread, status=status)

    response = client.post(f"/api/threads/{thread.thread_id}/compress/undo")

    assert response.status_code == 409
    assert response.json()["code"] == "thread_busy"
    assert repository.get_values() == before
    assert not CompressionRecord.objects.filter(trigger="undo").exists()


@pytest.mark.parametrize("case", ["missing", "deleted", "foreign"])
def test_undo_not_found_kinds_are_404_without_existence_leak(
    client, user, other_user, thread, summarizer, case
):
    summarizer()
    repository = seed_state(thread, conversation_messages(5))
    client.force_login(user)
    assert _compress(client, thread).json()["status"] == "completed"
    before = repository.get_values()
    thread_id = uuid.uuid4() if case == "missing" else thread.thread_id
    if case == "deleted":
        Conversation.objects.filter(pk=thread.pk).update(status="deleted")
    client.force_login(other_user if case == "foreign" else user)

    response = client.post(f"/api/threads/{thread_id}/compress/undo")

    assert response.status_code == 404
    assert response.json() == {"code": "thread_not_found", "message": "No such thread."}
    assert repository.get_values() == before


def test_a_thread_with_an_empty_checkpoint_is_a_no_op(client, user, thread, summarizer):
    model = summarizer()
    client.force_login(user)
    response = _compress(client, thread)
    assert response.status_code == 200
    assert response.json()["status"] == "no_op" and response.json()["reason"] == "insufficient_history"
    assert model.summary_prompts == [] and workdir_files(thread) == []
    assert repository_for(thread).get_values() == {}
    assert client.post(f"/api/threads/{thread.thread_id}/compress/undo").json()["code"] == "nothing_to_undo"


def test_idempotency_keys_are_scoped_to_their_user(client, user, other_user, agent, thread, summarizer):
    from conversations.services import thread_create

    model = summarizer()
    theirs = thread_create(user=other_user, agent_slug=agent.slug)
    seed_state(thread, conversation_messages(5))
    seed_state(theirs, conversation_messages(5))
    client.force_login(user)
    assert _compress(client, thread, **{"Idempotency-Key": "k-42"}).status_code == 200
    client.force_login(other_user)
    response = _compress(client, theirs, **{"Idempotency-Key": "k-42"})
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "completed"
    assert len(model.summary_prompts) == 2


def test_response_always_carries_file_path_and_reason(client, user, thread, summarizer):
    summarizer()
    seed_state(thread, conversation_messages(1))
    client.force_login(user)
    body = _compress(client, thread).json()
    assert body == {
        "status": "no_op",
        "before_tokens": body["before_tokens"],
        "after_tokens": body["after_tokens"],
        "compressed_messages": 0,
        "file_path": None,
        "reason": "insufficient_history",
    }
    assert body["before_tokens"] == body["after_tokens"] > 0


def test_undo_tells_the_threads_pages(client, user, thread, summarizer, django_capture_on_commit_callbacks):
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from conversations.events import thread_group

    summarizer()
    seed_state(thread, conversation_messages(5))
    client.force_login(user)
    _compress(client, thread)
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(thread_group(thread.thread_id), channel)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/api/threads/{thread.thread_id}/compress/undo").status_code == 200
    event = async_to_sync(layer.receive)(channel)["event"]
    assert (event["type"], event["status"], event["level"]) == ("compression", "undone", "undo")


def test_undo_leaves_an_audit_record(client, user, thread, summarizer):
    summarizer()
    seed_state(thread, conversation_messages(5))
    client.force_login(user)
    _compress(client, thread)
    body = client.post(f"/api/threads/{thread.thread_id}/compress/undo").json()
    record = CompressionRecord.objects.get(conversation=thread, trigger="undo")
    assert (record.status, record.requested_by) == ("completed", user)
    assert (record.before_tokens, record.after_tokens) == (body["before_tokens"], body["after_tokens"])


def test_the_undo_history_is_bounded():
    from compression.engine.state import MAX_SUMMARY_EVENTS, push_summary_event

    history: list = []
    for n in range(MAX_SUMMARY_EVENTS + 5):
        history = push_summary_event(history, {"cutoff_index": n})
    assert len(history) == MAX_SUMMARY_EVENTS
    assert history[-1] == {"cutoff_index": MAX_SUMMARY_EVENTS + 4}  # newest kept, oldest dropped
    assert push_summary_event(None, None) == [None]  # "no summary yet" is itself undoable to
