"""Fixtures of the context engine's tests, and of any test that drives it: in-memory stores, a config,
real tool outputs. Pure: no Django, so ``tests/context_engine`` runs without settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_engine.config import CompressionConfig
from context_engine.errors import StoreError
from context_engine.store import MemoryStore
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
