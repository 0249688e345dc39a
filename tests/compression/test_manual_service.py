"""Manual compression through the API: results, errors, idempotency, undo, audit records."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import AIMessage

from compression.models import CompressionRecord
from context_engine.state import SUMMARY_EVENT_KEY
from context_engine.summary.history import effective_messages
from conversations.models import AgentRun, Conversation
from tests.compression._threads import (
    compress_request,
    repository_for,
    seed_state,
    without_ledger,
    workdir_files,
)
from tests.context_engine.chats import conversation_messages
from tests.context_engine.fakes import ScriptedChatModel

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def test_compression_summarizes_history_and_keeps_every_message(client, user, thread, summarizer):
    model = summarizer("## SESSION INTENT\nRead documents about compression.")
    messages = conversation_messages(5)
    repository = seed_state(thread, messages)
    client.force_login(user)

    response = compress_request(client, thread)

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
    body = compress_request(client, thread).json()

    usage = repository_for(thread).get_values()["token_usage"]
    assert usage["compression"] == body
    assert usage["summary_active"] is True
    assert "llm_input_tokens" not in usage and "last_call_usage" not in usage
    # The response's "after" is the whole next request (system prompt, tools, reply priming counted):
    # exactly the figure the meter shows next.
    assert usage["next_llm_input_tokens"] == body["after_tokens"]
    assert body["after_tokens"] > 340 and body["outcome"] == "summarized"
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

    response = compress_request(client, thread)

    assert response.status_code == 200
    assert response.json()["status"] == "no_op"
    assert response.json()["reason"] == "insufficient_history"
    assert model.summary_prompts == []
    assert repository_for(thread).get_values() == before
    assert workdir_files(thread) == []
    assert CompressionRecord.objects.get(conversation=thread).status == "no_op"


# A failed call; an empty or refused answer is replaced by the extractive summary (issue 37).
@pytest.mark.parametrize("summary", [RuntimeError("model exploded"), RuntimeError("upstream 503")])
def test_summary_failure_answers_502_and_leaves_the_checkpoint_unchanged(
    client, user, thread, summarizer, summary
):
    summarizer(summary)
    seed_state(thread, conversation_messages(5))
    before = repository_for(thread).get_values()
    client.force_login(user)

    response = compress_request(client, thread)

    assert response.status_code == 502
    assert response.json()["code"] == "summary_failed"
    assert set(response.json()) == {"code", "message"}  # no internal ids in the body
    after = repository_for(thread).get_values()
    assert without_ledger(after) == without_ledger(before)
    assert SUMMARY_EVENT_KEY not in after
    assert all("exploded" not in str(m.content) for m in after["messages"])
    record = CompressionRecord.objects.get(conversation=thread)
    assert record.status == "failed" and record.error


def test_history_write_failure_answers_502_with_state_unchanged(
    client, user, thread, summarizer, monkeypatch
):
    from context_engine.errors import StoreError

    summarizer()
    seed_state(thread, conversation_messages(5))
    before = repository_for(thread).get_values()

    def refuse(self, path, content):
        raise StoreError("disk full")

    monkeypatch.setattr("agent_platform.workdir.Workdir.append_text", refuse)
    client.force_login(user)
    response = compress_request(client, thread)
    assert response.status_code == 502
    assert "history" in response.json()["message"]
    assert without_ledger(repository_for(thread).get_values()) == without_ledger(before)


def test_idempotent_retry_makes_exactly_one_summary_call(client, user, thread, summarizer):
    model = summarizer()
    seed_state(thread, conversation_messages(5))
    client.force_login(user)

    first = compress_request(client, thread, **{"Idempotency-Key": "key-1"})
    second = compress_request(client, thread, **{"Idempotency-Key": "key-1"})

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

    assert compress_request(client, thread, **{"Idempotency-Key": "shared"}).status_code == 200
    response = compress_request(client, other, **{"Idempotency-Key": "shared"})
    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_conflict"


def test_second_compression_stores_the_global_cutoff(client, user, thread, summarizer):
    summarizer("one", "two")
    repository = seed_state(thread, conversation_messages(5))
    client.force_login(user)
    compress_request(client, thread)
    first_cutoff = repository.get_values()[SUMMARY_EVENT_KEY]["cutoff_index"]
    repository.update({"messages": conversation_messages(8)[20:]})
    body = compress_request(client, thread).json()
    event = repository.get_values()[SUMMARY_EVENT_KEY]
    assert event["cutoff_index"] == first_cutoff + body["compressed_messages"] - 1


@pytest.mark.parametrize("status", ["running", "queued", "interrupted"])
def test_busy_thread_is_409_and_never_queued(client, user, thread, summarizer, status):
    model = summarizer()
    seed_state(thread, conversation_messages(5))
    AgentRun.objects.create(conversation=thread, status=status)
    client.force_login(user)

    response = compress_request(client, thread)

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
    assert compress_request(client, thread).status_code == 200


@pytest.mark.parametrize("case", ["missing", "deleted", "foreign"])
def test_not_found_kinds_are_404_without_existence_leak(client, user, other_user, thread, summarizer, case):
    summarizer()
    thread_id = thread.thread_id
    if case == "missing":
        thread_id = uuid.uuid4()
    elif case == "deleted":
        Conversation.objects.filter(pk=thread.pk).update(status="deleted")
    client.force_login(other_user if case == "foreign" else user)

    response = client.post(f"/api/threads/{thread_id}/compress?wait=true")

    assert response.status_code == 404
    assert response.json() == {"code": "thread_not_found", "message": "No such thread."}


def test_agent_without_the_capability_is_422(client, user, thread, summarizer):
    summarizer()
    thread.agent.capabilities = []
    thread.agent.save()
    client.force_login(user)
    response = compress_request(client, thread)
    assert response.status_code == 422
    assert response.json()["code"] == "capability_missing"


def test_bearer_clients_can_compress(client, user, thread, summarizer, bearer):
    summarizer()
    seed_state(thread, conversation_messages(5))
    assert (
        client.post(f"/api/threads/{thread.thread_id}/compress?wait=true", headers=bearer).status_code == 200
    )


def test_bad_idempotency_key_is_422(client, user, thread):
    client.force_login(user)
    response = compress_request(client, thread, **{"Idempotency-Key": "x" * 201})
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input"


@pytest.mark.parametrize("key", ["", "   ", "a\x00b", "line\nbreak", "tab\there"])
def test_empty_or_unprintable_idempotency_key_is_422_and_compresses_nothing(
    client, user, thread, summarizer, key
):
    model = summarizer()
    seed_state(thread, conversation_messages(5))
    client.force_login(user)
    response = compress_request(client, thread, **{"Idempotency-Key": key})
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input"
    assert model.summary_prompts == [] and not CompressionRecord.objects.exists()


def test_state_repository_refuses_a_graph_without_checkpointer(thread):
    from agent_platform.runtime.graph import build_agent_graph
    from agent_platform.runtime.state_repository import AgentStateRepository

    graph = build_agent_graph(agent=thread.agent, checkpointer=None)
    with pytest.raises(ValueError, match="checkpointer"):
        AgentStateRepository(graph, thread.thread_id)


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
    assert compress_request(client, thread).status_code == 200
    assert asked_for == [thread.agent]
    event = repository_for(thread).get_values()[SUMMARY_EVENT_KEY]
    assert "summarized by the agent's model" in event["summary_message"].content


def test_a_thread_with_an_empty_checkpoint_is_a_no_op(client, user, thread, summarizer):
    model = summarizer()
    client.force_login(user)
    response = compress_request(client, thread)
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
    assert compress_request(client, thread, **{"Idempotency-Key": "k-42"}).status_code == 200
    client.force_login(other_user)
    response = compress_request(client, theirs, **{"Idempotency-Key": "k-42"})
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "completed"
    assert len(model.summary_prompts) == 2


def test_response_always_carries_file_path_and_reason(client, user, thread, summarizer):
    summarizer()
    seed_state(thread, conversation_messages(1))
    client.force_login(user)
    body = compress_request(client, thread).json()
    assert body == {
        "status": "no_op",
        "before_tokens": body["before_tokens"],
        "after_tokens": body["after_tokens"],
        "compressed_messages": 0,
        "file_path": None,
        "reason": "insufficient_history",
        "pinned_messages": 0,
        "summary_tokens": None,
        "folded_tokens": None,
        "loss_report": None,
        "spend_guard": None,
        "outcome": "no_change_needed",
        "reason_detail": {"code": "insufficient_history"},
    }
    assert body["before_tokens"] == body["after_tokens"] > 0


def test_a_full_disk_says_so_and_names_no_file_as_written(client, user, thread, summarizer, monkeypatch):
    """Issue 41, item 5: ENOSPC is ``storage_full`` (507) in words that say what happened, not a
    ``summary_failed``; nothing was written or applied, and the failed record says the same."""
    import errno

    summarizer()
    seed_state(thread, conversation_messages(5))
    before = repository_for(thread).get_values()

    def no_room(root, name, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    # The local disk's own write (the workdir wraps what it raises, as a real full disk's error).
    monkeypatch.setattr("agent_platform.workdir._replace_local_nofollow", no_room)
    client.force_login(user)
    response = compress_request(client, thread)
    assert response.status_code == 507, response.content
    body = response.json()
    assert body["code"] == "storage_full" and "disk is full" in body["message"]
    assert "outputs/" not in body["message"]  # no file named as if it had been saved
    assert without_ledger(repository_for(thread).get_values()) == without_ledger(before)
    record = CompressionRecord.objects.get(conversation=thread)
    assert record.status == "failed" and "disk is full" in record.error
    assert record.file_path == "" and record.saved_files == []
