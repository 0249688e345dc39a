"""How the compression middleware sends a compressed request (a provider that still rejects it gets the
platform's own account, never its raw error) and hands back a response carrying a state update."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, BaseMessage
from langgraph.types import Command

from context_engine.errors import CompressionError
from context_engine.policy import trigger as policy
from context_engine.policy.overflow import (
    is_context_overflow,
    provider_limit,
    still_too_long,
    summary_failed_too_long,
)
from context_engine.steps import CallModel, Steps


@dataclass(frozen=True)
class Outgoing:
    """A compressed request about to go out: its messages, and its size by our raw estimate (``raw``)
    and calibrated (``tokens``), against the model's window."""

    request: ModelRequest
    messages: list[BaseMessage]
    raw: int
    tokens: int
    context_window: int | None

    def call(self) -> CallModel:
        return CallModel(with_messages(self.request, self.messages))

    def figure(self, limit: int | None) -> int:
        """Its size as an account of a check against ``limit`` states it (``policy.failed_figure``)."""
        return policy.failed_figure(self.raw, self.tokens, limit=limit)


def with_messages(request: ModelRequest, messages: Sequence[BaseMessage]) -> ModelRequest:
    """``request`` sending ``messages``. LangChain types a request's messages as ``AnyMessage`` (the
    union of its message classes); the engine's views hold the same objects typed as their base."""
    return request.override(messages=cast("list[AnyMessage]", list(messages)))


def send_fitting(out: Outgoing, *, tried: str) -> Steps[ModelResponse]:
    """Send the compressed request unless either figure reaches the window. A request that cannot fit,
    or that the provider still finds too long, fails the turn with the platform's own account (how far
    over; ``tried``: what was done), never the provider's raw error."""
    if not policy.fits_window(out.raw, out.tokens, limit=out.context_window):
        figure = out.figure(out.context_window)
        raise CompressionError(still_too_long(figure, out.context_window, tried=tried))
    try:
        response: ModelResponse = yield out.call()
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        limit = provider_limit(exc)
        raise CompressionError(
            still_too_long(out.figure(limit), out.context_window, tried=tried, limit=limit)
        ) from exc
    return response


def send_fallback(
    out: Outgoing, *, cause: Exception, overflowed_at: int | None, overflow_limit: int | None = None
) -> Steps[ModelResponse]:
    """After a failed summary (``cause``): go on with the compacted view if it can fit by both figures,
    else a clear error: what the provider rejected (at ``overflowed_at``, stating ``overflow_limit``),
    or how far over the window it is."""
    window = out.context_window
    tokens = out.figure(policy.send_limit(context_window=window, overflowed_at=overflowed_at))
    if not policy.fallback_fits(out.tokens, raw=out.raw, context_window=window, overflowed_at=overflowed_at):
        rejected = overflowed_at is not None
        error = summary_failed_too_long(cause, tokens, window, rejected=rejected, limit=overflow_limit)
        raise CompressionError(error) from cause
    try:
        response: ModelResponse = yield out.call()
    except Exception as exc:
        if is_context_overflow(exc):
            limit = provider_limit(exc)
            error = summary_failed_too_long(cause, tokens, window, rejected=True, limit=limit)
            raise CompressionError(error) from exc
        raise
    return response


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


def with_ledger(
    result: ModelResponse | ExtendedModelResponse, update: dict[str, Any]
) -> ModelResponse | ExtendedModelResponse:
    """``result``, also writing the thread's spend-guard ledger ``update`` (sub-agents' calls taken
    in), unless ``result`` already writes a newer ledger."""
    if not update:
        return result
    if isinstance(result, ExtendedModelResponse):
        earlier = result.command.update if result.command is not None else None
        written = earlier if isinstance(earlier, dict) else {}
        command: Command[Any] = Command(update={**update, **written})
        return ExtendedModelResponse(model_response=result.model_response, command=command)
    return ExtendedModelResponse(model_response=result, command=Command(update=update))
