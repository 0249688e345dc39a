"""Measurements shared by the two middlewares: the fixed part of a request (system prompt, tool
schemas, reply priming) and provider-usage arithmetic."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage

from compression.engine.tokens import TokenProfile, estimate_message, estimate_tools


def system_tokens(request: ModelRequest, profile: TokenProfile) -> int:
    system = request.system_message
    return estimate_message(system, profile) if system is not None else 0


def request_overhead(request: ModelRequest, profile: TokenProfile) -> int:
    """Everything ``estimate_messages`` counts besides the messages: system prompt, tools, reply priming."""
    return (
        system_tokens(request, profile)
        + estimate_tools(request.tools or (), profile)
        + math.ceil(profile.reply_overhead)
    )


def response_messages(response: ModelResponse | AIMessage) -> list[BaseMessage]:
    return [response] if isinstance(response, AIMessage) else list(response.result)


def response_usage(messages: list[BaseMessage]) -> dict[str, Any] | None:
    """The provider-reported usage of a model call (``usage_metadata`` of its AI messages), if any."""
    total: dict[str, Any] | None = None
    for message in messages:
        usage = getattr(message, "usage_metadata", None)
        if usage:
            total = add_usage(total, dict(usage))
    return total


def add_usage(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Key-wise sum of two usage dicts (nested detail dicts included); other values: right wins."""
    merged: dict[str, Any] = dict(left or {})
    for key, value in (right or {}).items():
        current = merged.get(key)
        if isinstance(value, Mapping):
            merged[key] = add_usage(current if isinstance(current, Mapping) else None, value)
        elif (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and isinstance(current, int | float)
        ):
            merged[key] = current + value
        else:
            merged[key] = value
    return merged


def count_call(usage: Mapping[str, Any] | None, accumulated: Mapping[str, Any] | None) -> dict[str, Any]:
    """``accumulated`` plus one call of ``usage`` (``calls`` counts the calls)."""
    return add_usage(accumulated, {**(usage or {}), "calls": 1})
