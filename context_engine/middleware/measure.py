"""Measurements of a model request shared by the two middlewares: the fixed part of a request
(system prompt, tool schemas, reply priming) and the messages of a response."""

from __future__ import annotations

import math

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage

from context_engine.tokens.messages import TokenProfile, estimate_message, estimate_tools


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
