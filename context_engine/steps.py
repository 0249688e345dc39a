"""The one core, two drivers: a middleware's logic is a generator that yields effects (call the model,
call the summarizer, do blocking file work) and receives their results; the sync and async twins only
differ in how they perform those effects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.internal_call_transformer import internal_call_metadata
from langchain_core.language_models.chat_models import BaseChatModel
from langgraph.constants import TAG_NOSTREAM

from context_engine.formats import SUMMARY_MARKER_KEY, SUMMARY_MARKER_VALUE

R = TypeVar("R")


@dataclass(frozen=True)
class CallModel:
    request: ModelRequest


@dataclass(frozen=True)
class Summarize:
    prompt: str


@dataclass(frozen=True)
class Blocking:
    """File work (the result store); run in a worker thread on the async path."""

    fn: Callable[[], Any]


Effect = CallModel | Summarize | Blocking
Steps = Generator[Effect, Any, R]


def summary_call_config() -> dict[str, Any]:
    """Tagged so the summary never reaches ``stream_mode="messages"`` (nor run.messages)."""
    return {
        "tags": [TAG_NOSTREAM],
        "metadata": {SUMMARY_MARKER_KEY: SUMMARY_MARKER_VALUE, **internal_call_metadata()},
    }


def run_sync(
    steps: Steps[R],
    *,
    handler: Callable[[ModelRequest], ModelResponse],
    summary_model: BaseChatModel | None = None,
) -> R:
    try:
        effect = next(steps)
        while True:
            try:
                if isinstance(effect, CallModel):
                    value = handler(effect.request)
                elif isinstance(effect, Summarize):
                    value = _model(summary_model).invoke(effect.prompt, config=summary_call_config())
                else:
                    value = effect.fn()
            except Exception as exc:
                effect = steps.throw(exc)
            else:
                effect = steps.send(value)
    except StopIteration as stop:
        return stop.value


async def run_async(
    steps: Steps[R],
    *,
    handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    summary_model: BaseChatModel | None = None,
) -> R:
    try:
        effect = next(steps)
        while True:
            try:
                if isinstance(effect, CallModel):
                    value = await handler(effect.request)
                elif isinstance(effect, Summarize):
                    value = await _model(summary_model).ainvoke(effect.prompt, config=summary_call_config())
                else:
                    value = await asyncio.to_thread(effect.fn)
            except Exception as exc:
                effect = steps.throw(exc)
            else:
                effect = steps.send(value)
    except StopIteration as stop:
        return stop.value


def _model(model: BaseChatModel | None) -> BaseChatModel:
    if model is None:  # pragma: no cover - a wiring error
        raise RuntimeError("This middleware has no summary model.")
    return model
