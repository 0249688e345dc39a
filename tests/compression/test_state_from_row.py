"""GET state is served from the thread's row, never opening its checkpoint, and answers what the
checkpoint-based answer gives over a thread's life: new, after messages, after a compression, after
undo (issue 30 item 10)."""

from __future__ import annotations

import pytest

from agent_platform.runtime.state_repository import AgentStateRepository
from conversations import selectors
from conversations.models import Conversation
from conversations.schemas import StateOut
from conversations.services import message_intake

pytestmark = pytest.mark.django_db


@pytest.fixture
def checkpoint_reads(monkeypatch):
    """How many times a checkpoint was opened (read of state, or of its version)."""
    reads: list[str] = []
    for name in ("snapshot", "version"):
        original = getattr(AgentStateRepository, name)

        def counted(self, _original=original, _name=name):
            reads.append(_name)
            return _original(self)

        monkeypatch.setattr(AgentStateRepository, name, counted)
    return reads


def _served_equals_the_checkpoints(client, thread, checkpoint_reads) -> dict:
    checkpoint_reads.clear()
    served = client.get(f"/api/threads/{thread.thread_id}/state")
    assert served.status_code == 200
    assert checkpoint_reads == []  # the row and the cache answered
    fresh = Conversation.objects.select_related("agent").get(pk=thread.pk)
    values = selectors.thread_values(conversation=fresh)
    from_checkpoint = selectors.thread_state(conversation=fresh, values=values)
    expected = StateOut.model_validate(from_checkpoint).model_dump(mode="json")
    body = served.json()
    # latest_run is read from its row either way (and serialized by the API's own JSON encoder).
    served_run, expected_run = body.pop("latest_run"), expected.pop("latest_run")
    assert (served_run or {}).get("id") == (expected_run or {}).get("id")
    assert body == expected
    return body


def test_state_from_the_row_equals_the_checkpoints_over_a_threads_life(
    client, user, thread, summarizer, checkpoint_reads, django_capture_on_commit_callbacks
):
    summarizer("the summary")
    client.force_login(user)
    assert _served_equals_the_checkpoints(client, thread, checkpoint_reads)["token_usage"] is None

    for turn in range(6):
        with django_capture_on_commit_callbacks(execute=True):
            message_intake(thread_id=thread.thread_id, user=user, content=f"turn {turn}: " + "words " * 200)
        measured = _served_equals_the_checkpoints(client, thread, checkpoint_reads)["token_usage"]
        assert measured and measured["next_llm_input_tokens"] > 0

    before = measured["next_llm_input_tokens"]
    assert client.post(f"/api/threads/{thread.thread_id}/compress?wait=true").json()["status"] == "completed"
    compressed = _served_equals_the_checkpoints(client, thread, checkpoint_reads)["token_usage"]
    assert compressed["next_llm_input_tokens"] < before  # the figures did change, and the row followed

    with django_capture_on_commit_callbacks(execute=True):
        message_intake(thread_id=thread.thread_id, user=user, content="after the summary")
    _served_equals_the_checkpoints(client, thread, checkpoint_reads)

    assert client.post(f"/api/threads/{thread.thread_id}/compress/undo").status_code == 200
    undone = _served_equals_the_checkpoints(client, thread, checkpoint_reads)["token_usage"]
    assert undone["next_llm_input_tokens"] > compressed["next_llm_input_tokens"]


def test_a_row_measured_before_the_copy_existed_is_answered_from_the_checkpoint(
    client, user, thread, summarizer, checkpoint_reads, django_capture_on_commit_callbacks
):
    summarizer("the summary")
    with django_capture_on_commit_callbacks(execute=True):
        message_intake(thread_id=thread.thread_id, user=user, content="hello")
    Conversation.objects.filter(pk=thread.pk).update(token_usage=None)  # as migrated: figures, no copy
    client.force_login(user)
    checkpoint_reads.clear()
    served = client.get(f"/api/threads/{thread.thread_id}/state").json()
    assert checkpoint_reads == ["snapshot"]
    values = selectors.thread_values(conversation=thread)
    assert served["token_usage"] == values["token_usage"] and served["token_usage"]
