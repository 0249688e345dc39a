"""How the compression middleware sends a compressed request (a provider that still rejects it gets the
platform's own account, never its raw error) and hands back a response carrying a state update."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage
from langgraph.types import Command

from context_engine.errors import CompressionError
from context_engine.policy import trigger as policy
from context_engine.policy.overflow import is_context_overflow, still_too_long, summary_failed_too_long
from context_engine.steps import CallModel, Steps


def send_fitting(
    request: ModelRequest,
    messages: list[BaseMessage],
    *,
    estimate: Callable[[], int],
    context_window: int | None,
    tried: str,
) -> Steps[ModelResponse]:
    """Send the compressed request. A provider that still finds it too long fails the turn with the
    platform's own account (``estimate()``: how far over; ``tried``: what was done), never its raw error."""
    try:
        return (yield CallModel(request.override(messages=messages)))
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        raise CompressionError(still_too_long(estimate(), context_window, tried=tried)) from exc


def send_fallback(
    request: ModelRequest,
    view: list[BaseMessage],
    *,
    tokens: int,
    context_window: int | None,
    overflowed_at: int | None,
    cause: Exception,
) -> Steps[ModelResponse]:
    """After a failed summary (``cause``): go on with the compacted ``view`` (``tokens``) if it can fit,
    else a clear error."""
    if not policy.fallback_fits(tokens, context_window=context_window, overflowed_at=overflowed_at):
        raise CompressionError(summary_failed_too_long(cause, tokens, context_window)) from cause
    try:
        return (yield CallModel(request.override(messages=view)))
    except Exception as exc:
        if is_context_overflow(exc):
            raise CompressionError(summary_failed_too_long(cause, tokens, context_window)) from exc
        raise


def persisted(replacements: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Overflow-clip replacements that can replace their originals in state (they need an id)."""
    return [m for m in replacements if m.id]


def with_update(
    response: ModelResponse, update: dict[str, Any], replacements: Sequence[BaseMessage]
) -> ModelResponse | ExtendedModelResponse:
    """``response``, with ``update`` (and the overflow-clip replacements) written to state if any."""
    if kept := persisted(replacements):
        update = {**update, "messages": kept}
    if not update:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update=update))
