"""Helpers for the CompressionMiddleware tests: configs, the middleware, sizes, files, drivers, and the
agent whose model is the real ``ChatOpenAI`` talking to the local OpenAI-protocol stub."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from context_engine.config import CompressionConfig
from context_engine.formats import CONVERSATION_HISTORY_DIR, LARGE_TOOL_RESULTS_DIR
from context_engine.middleware import CompressionMiddleware, TokenUsageMiddleware
from context_engine.store import MemoryStore
from context_engine.tokens.messages import estimate_messages
from tests.context_engine.fakes import SYSTEM, ScriptedChatModel

WINDOW = 32_000


def mw_config(
    trigger: int, *, keep: int = 4, limit: int = 100, window: int | None = WINDOW, **kw
) -> CompressionConfig:
    return CompressionConfig(
        trigger_tokens=trigger, keep_messages=keep, tool_result_token_limit=limit, context_window=window, **kw
    )


def mw_for(config: CompressionConfig, store=None, model=None) -> CompressionMiddleware:
    return CompressionMiddleware(
        config=config,
        store=store if store is not None else MemoryStore(),
        summary_model=model or ScriptedChatModel(),
    )


def request_size(mw: CompressionMiddleware, request) -> int:
    return estimate_messages(
        request.messages, system=request.system_message, tools=request.tools, profile=mw.profile
    )


def history_files(store: MemoryStore) -> list[str]:
    return [p for p in store.files if p.startswith(CONVERSATION_HISTORY_DIR)]


def result_files(store: MemoryStore) -> list[str]:
    return [p for p in store.files if p.startswith(LARGE_TOOL_RESULTS_DIR)]


async def call_mw(mw, request, handler, mode):
    if mode == "sync":
        return mw.wrap_model_call(request, handler)
    return await mw.awrap_model_call(request, handler.acall)


MODES = pytest.mark.parametrize("mode", ["sync", "async"])


def stub_chat(stub) -> ChatOpenAI:
    """The real OpenAI chat model, pointed at the local stub server, without retries."""
    return ChatOpenAI(
        model="gpt-4o-mini", base_url=stub.base_url, api_key="sk-test", max_retries=0, timeout=10
    )


def stub_agent(model: ChatOpenAI, store: MemoryStore):
    """An agent with the compression middleware whose trigger is never reached: only a provider's
    overflow makes it compress."""
    config = CompressionConfig(
        trigger_tokens=1_000_000, keep_messages=4, tool_result_token_limit=100_000, context_window=None
    )
    middleware = [
        CompressionMiddleware(config=config, store=store, summary_model=model),
        TokenUsageMiddleware(config=config),
    ]
    return create_agent(model, [], system_prompt=SYSTEM, middleware=middleware, checkpointer=InMemorySaver())
