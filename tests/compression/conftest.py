"""Fixtures for the thread-maintenance tests: the scripted summarizer and threads with seeded
checkpoints (the engine's in-memory stores, configs and real tool outputs are in
``tests.support.engine_fixtures``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import Conversation
from tests.compression._threads import seed_state
from tests.context_engine.chats import SUMMARY, USAGE, conversation_messages
from tests.context_engine.fakes import ScriptedChatModel


@pytest.fixture
def thread(make_thread):
    """A thread of an agent that keeps 4 messages; its checkpoint is empty (tests seed what they need)."""
    return make_thread("Long thread", pressure=None, idle=timedelta(0), turns=0)


@pytest.fixture
def summarizer(monkeypatch):
    """Every agent's model, scripted: ``summarizer(*summaries)`` returns the fake to inspect."""

    def install(*summaries, usage=USAGE) -> ScriptedChatModel:
        model = ScriptedChatModel(summaries=list(summaries) or [SUMMARY], summary_usage=usage)
        monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
        return model

    return install


@pytest.fixture
def make_thread(user, agent):
    """A thread with a seeded checkpoint and pressure figures; ``turns=1`` is too short to compress."""
    from conversations.services import thread_create

    agent.summary_keep_messages = 4
    agent.save()

    def make(title, *, pressure=0.9, idle=timedelta(hours=3), turns=5, owner=None, agent_slug=None):
        thread = thread_create(user=owner or user, agent_slug=agent_slug or agent.slug, title=title)
        if turns:
            seed_state(thread, conversation_messages(turns))
        Conversation.objects.filter(pk=thread.pk).update(
            pressure_ratio=pressure,
            context_tokens=None if pressure is None else int(pressure * 100_000),
            last_activity_at=timezone.now() - idle,
        )
        thread.refresh_from_db()
        return thread

    return make


@pytest.fixture
def stub_agent_with(openai_stub, monkeypatch):
    """An agent whose model is the real OpenAI client against the local OpenAI-protocol stub:
    ``stub_agent_with(**fields)`` (keeps 4 messages unless told otherwise)."""
    from agent_platform.models import Agent, ModelEndpoint

    monkeypatch.setenv("STUB_API_KEY", "sk-test")
    endpoint = ModelEndpoint.objects.create(
        name="stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY"
    )

    def make(**fields) -> Agent:
        fields = {"summary_keep_messages": 4, **fields}
        return Agent.objects.create(
            name="Stubbed", slug="stubbed", endpoint=endpoint, model_name="gpt-4o-mini", **fields
        )

    return make


@pytest.fixture
def summarized_thread(client, user, stub_agent_with, openai_stub):
    """A thread of 3 seeded turns (in the checkpoint and the transcript) whose oldest messages a manual
    compression folded into a summary, through the real client against the stub; ``client`` is logged in."""
    from conversations.models import Message
    from conversations.services import thread_create
    from tests.compression._threads import seed_state
    from tests.context_engine.chats import SUMMARY, conversation_messages

    agent = stub_agent_with(summary_keep_messages=4)
    thread = thread_create(user=user, agent_slug=agent.slug)
    messages = conversation_messages(3)
    seed_state(thread, messages)
    role = {"human": "user", "ai": "assistant", "tool": "tool"}
    for seq, message in enumerate(messages, start=1):  # the transcript holds what the state holds
        Message.objects.create(
            conversation=thread, seq=seq, role=role[message.type], content=message.text,
            lc_message_id=message.id, tool_name=getattr(message, "name", "") or "",
        )  # fmt: skip
    openai_stub.reply(SUMMARY)
    client.force_login(user)
    assert client.post(f"/api/threads/{thread.thread_id}/compress?wait=true").status_code == 200
    return thread
