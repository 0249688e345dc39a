"""Fixtures of thread tests: a thread, an API client logged in as its owner, scriptable chat models."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from tests.conversations.page_support import write_token_usage


class ScriptedChatModel(BaseChatModel):
    """Replies from ``script`` in order (strings or AIMessages); ``gate`` (if set) blocks each call."""

    script: list[Any]
    calls: list[list[BaseMessage]] = []
    gate: Any = None
    started: Any = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        self.calls.append(list(messages))
        if self.started is not None:
            self.started.set()
        if self.gate is not None:
            assert self.gate.wait(10), "the test never opened the gate"
        item = self.script.pop(0) if self.script else "(script exhausted)"
        if isinstance(item, Exception):
            raise item
        message = item if isinstance(item, AIMessage) else AIMessage(content=item)
        return message.model_copy(
            update={"usage_metadata": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}
        )

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        reply = self._next(messages)
        words = reply.text.split(" ")
        for index, word in enumerate(words):
            yield ChatGenerationChunk(
                message=AIMessageChunk(content=word + (" " if index < len(words) - 1 else ""))
            )
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {
                        "name": c["name"],
                        "args": __import__("json").dumps(c["args"]),
                        "id": c["id"],
                        "index": i,
                    }
                    for i, c in enumerate(reply.tool_calls)
                ],
                usage_metadata=reply.usage_metadata,
            )
        )


@pytest.fixture
def scripted_model(monkeypatch) -> Callable[..., ScriptedChatModel]:
    """Make every agent use a ScriptedChatModel; returns the factory so tests can script it."""

    def install(*script: Any, gate: threading.Event | None = None) -> ScriptedChatModel:
        model = ScriptedChatModel(script=list(script), calls=[], gate=gate, started=threading.Event())
        monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
        return model

    return install


@pytest.fixture
def owner_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def seed_token_usage():
    """Seed a thread's ``token_usage`` through the state repository (the token-usage middleware's key)."""
    return write_token_usage


@pytest.fixture
def say(thread, user, django_capture_on_commit_callbacks):
    """``say(text)``: ``user`` sends ``text`` to ``thread``; its run (eager) has succeeded; the message."""
    from conversations.models import AgentRun
    from conversations.services import message_intake

    def send(content):
        with django_capture_on_commit_callbacks(execute=True):
            result = message_intake(thread_id=thread.thread_id, user=user, content=content)
        result.run.refresh_from_db()
        assert result.run.status == AgentRun.Status.SUCCEEDED, result.run.error_detail
        return result.message

    return send
