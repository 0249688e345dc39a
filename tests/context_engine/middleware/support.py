"""Helpers for the direct CompressionMiddleware tests: configs, the middleware, sizes, files, drivers."""

from __future__ import annotations

import pytest

from context_engine.config import CompressionConfig
from context_engine.formats import CONVERSATION_HISTORY_DIR, LARGE_TOOL_RESULTS_DIR
from context_engine.middleware import CompressionMiddleware
from context_engine.store import MemoryStore
from context_engine.tokens.messages import estimate_messages
from tests.context_engine.fakes import ScriptedChatModel

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
