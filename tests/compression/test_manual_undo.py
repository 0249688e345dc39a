"""Undo of a manual compression, and what compressions tell the pages and the audit."""

from __future__ import annotations

import uuid

import pytest

from compression.models import CompressionRecord
from context_engine.state import SUMMARY_EVENT_KEY
from context_engine.summary.history import effective_messages
from conversations.models import AgentRun, Conversation
from tests.compression._threads import compress_request, seed_state
from tests.context_engine.chats import conversation_messages

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def test_undo_restores_the_previous_effective_messages_exactly(client, user, thread, summarizer):
    summarizer("first summary", "second summary")
    repository = seed_state(thread, conversation_messages(5))
    client.force_login(user)
    assert compress_request(client, thread).json()["status"] == "completed"
    repository.update({"messages": conversation_messages(8)[20:]})  # the thread grew
    after_first = repository.get_values()
    view_after_first = effective_messages(after_first["messages"], after_first[SUMMARY_EVENT_KEY])
    assert compress_request(client, thread).json()["status"] == "completed"

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
        body = compress_request(client, thread).json()

    async def drain() -> list[dict]:
        import asyncio

        events = []
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=1)
            except TimeoutError:
                return events
            events.append(message["event"])

    everything = async_to_sync(drain)()
    received = [e for e in everything if e["type"] == "compression"]
    assert [e["status"] for e in received] == ["started", "completed"]
    # The job's own lifecycle goes out too (the page's progress and Stop follow it).
    jobs = [e["job"]["status"] for e in everything if e["type"] == "compression.job"]
    assert jobs == ["queued", "running", "succeeded"]
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
    assert compress_request(client, thread).json()["status"] == "completed"
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
    assert compress_request(client, thread).json()["status"] == "completed"
    before = repository.get_values()
    thread_id = uuid.uuid4() if case == "missing" else thread.thread_id
    if case == "deleted":
        Conversation.objects.filter(pk=thread.pk).update(status="deleted")
    client.force_login(other_user if case == "foreign" else user)

    response = client.post(f"/api/threads/{thread_id}/compress/undo")

    assert response.status_code == 404
    assert response.json() == {"code": "thread_not_found", "message": "No such thread."}
    assert repository.get_values() == before


def test_undo_tells_the_threads_pages(client, user, thread, summarizer, django_capture_on_commit_callbacks):
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from conversations.events import thread_group

    summarizer()
    seed_state(thread, conversation_messages(5))
    client.force_login(user)
    compress_request(client, thread)
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
    compress_request(client, thread)
    body = client.post(f"/api/threads/{thread.thread_id}/compress/undo").json()
    record = CompressionRecord.objects.get(conversation=thread, trigger="undo")
    assert (record.status, record.requested_by) == ("completed", user)
    assert (record.before_tokens, record.after_tokens) == (body["before_tokens"], body["after_tokens"])


def test_the_undo_history_is_bounded():
    from context_engine.state import MAX_SUMMARY_EVENTS, push_summary_event

    history: list = []
    for n in range(MAX_SUMMARY_EVENTS + 5):
        history = push_summary_event(history, {"cutoff_index": n})
    assert len(history) == MAX_SUMMARY_EVENTS
    assert history[-1] == {"cutoff_index": MAX_SUMMARY_EVENTS + 4}  # newest kept, oldest dropped
    assert push_summary_event(None, None) == [None]  # "no summary yet" is itself undoable to
