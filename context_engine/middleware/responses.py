"""What the compression middleware hands back: its error, and a response carrying a state update."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import ExtendedModelResponse, ModelResponse
from langchain_core.messages import BaseMessage
from langgraph.types import Command


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
