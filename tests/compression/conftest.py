"""Fixtures for the compression tests: in-memory stores, configs and real tool outputs for the engine;
the scripted summarizer and threads with seeded checkpoints for the services."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from context_engine.config import CompressionConfig
from context_engine.errors import StoreError
from context_engine.store import MemoryStore
from conversations.models import Conversation
from tests.compression._agent_fakes import ScriptedChatModel
from tests.compression._threads import SUMMARY, USAGE, conversation_messages, seed_state
from tests.conftest import shared_data_file


class FailingStore(MemoryStore):
    """A store whose writes always fail, like a full disk."""

    def write_text(self, path: str, content: str) -> None:
        raise StoreError("disk full")

    def append_text(self, path: str, content: str) -> None:
        raise StoreError("disk full")


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def failing_store() -> FailingStore:
    return FailingStore()


@pytest.fixture
def config() -> CompressionConfig:
    return CompressionConfig(trigger_tokens=4096, keep_messages=4, tool_result_token_limit=50)


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="session")
def tavily_payloads() -> list[dict]:
    """Real Tavily web-search responses: {query, response_time, results: [{title, url, content, score}]}."""
    path = shared_data_file("pydantic_ai_cassettes", "tool_results.jsonl")
    return [r["payload"] for r in _jsonl(path) if r["kind"] == "tavily_search_response"]


@pytest.fixture(scope="session")
def pinecone_matches() -> list[list[dict]]:
    """Real Pinecone query matches: [{id, score, metadata: {text, source, ...}}]."""
    path = shared_data_file("kb_retrieval", "pinecone_examples_notebook_retrieval_outputs.jsonl")
    out = []
    for record in _jsonl(path):
        parsed = record.get("parsed")
        if record["kind"] == "pinecone_query_response" and isinstance(parsed, dict) and parsed.get("matches"):
            out.append([{k: v for k, v in m.items() if k != "values"} for m in parsed["matches"]])
    return out


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
