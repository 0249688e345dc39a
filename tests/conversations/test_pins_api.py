"""Pinning through the API: owner-only, pair-safe token counting, the per-agent cap, idempotency."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from conversations.models import MessagePin
from tests.compression._threads import seed_state, transcript_for
from tests.context_engine.chats import conversation_messages

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(thread):
    messages = [
        HumanMessage("Always answer in French.", id="instruction"),
        *conversation_messages(3, big_result_chars=400),
    ]
    seed_state(thread, messages)
    return thread, transcript_for(thread, messages)


def _pin(client, thread, message_id, method="post"):
    return getattr(client, method)(f"/api/threads/{thread.thread_id}/messages/{message_id}/pin")


def test_pin_and_unpin_a_message(owner_client, seeded):
    thread, rows = seeded
    response = _pin(owner_client, thread, rows["instruction"])
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["pinned"] is True and body["pinned_tokens"] > 0
    assert body["room_tokens"] == body["limit_tokens"] - body["pinned_tokens"]
    assert MessagePin.objects.filter(conversation=thread).count() == 1
    assert _pin(owner_client, thread, rows["instruction"]).json() == body  # idempotent

    response = _pin(owner_client, thread, rows["instruction"], "delete")
    assert response.status_code == 200
    assert response.json()["pinned"] is False and response.json()["pinned_tokens"] == 0
    assert not MessagePin.objects.exists()
    assert _pin(owner_client, thread, rows["instruction"], "delete").status_code == 200  # idempotent


def test_pinning_a_tool_result_counts_its_tool_call_too(owner_client, seeded):
    thread, rows = seeded
    result_only = _pin(owner_client, thread, rows["t1"]).json()["pinned_tokens"]
    _pin(owner_client, thread, rows["t1"], "delete")
    call_only = _pin(owner_client, thread, rows["a1"]).json()["pinned_tokens"]
    assert result_only == call_only  # either pin covers the same call + result group


def test_a_pin_over_the_agent_cap_is_refused_with_the_room_left(owner_client, seeded):
    thread, rows = seeded
    agent = thread.agent
    agent.summary_pinned_token_limit = 60
    agent.save()
    first = _pin(owner_client, thread, rows["instruction"]).json()
    response = _pin(owner_client, thread, rows["t0"])  # a 400-character tool result with its call
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "pin_limit_exceeded"
    assert body["room_tokens"] == 60 - first["pinned_tokens"]
    assert f"only {body['room_tokens']} of the 60 pinned tokens" in body["message"]
    assert MessagePin.objects.count() == 1


def test_the_cap_never_exceeds_a_quarter_of_the_trigger(owner_client, seeded):
    thread, rows = seeded
    agent = thread.agent
    agent.summary_threshold = 1  # T = 1024 tokens
    agent.summary_pinned_token_limit = 100000
    agent.save()
    assert _pin(owner_client, thread, rows["instruction"]).json()["limit_tokens"] == 256


def test_pins_are_owner_only_and_need_a_message_of_the_thread(client, other_user, owner_client, seeded):
    thread, rows = seeded
    assert _pin(owner_client, thread, 999999).status_code == 404
    assert _pin(owner_client, thread, 999999).json()["code"] == "message_not_found"
    client.force_login(other_user)
    assert _pin(client, thread, rows["instruction"]).status_code == 404
    assert not MessagePin.objects.exists()
