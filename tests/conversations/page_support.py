"""Helpers of the page tests: token_usage figures at a chosen pressure, seeded into a thread's state."""

from __future__ import annotations

from typing import Any


def usage_at(ratio: float, *, trigger: int = 102400, window: int = 128000) -> dict[str, Any]:
    """A ``token_usage`` (SPEC 7) whose ``summary_pressure_ratio`` is exactly ``ratio``."""
    tokens = round(ratio * trigger)
    return {
        "llm_input_tokens": tokens - 100,
        "next_llm_input_tokens": tokens,
        "system_tokens": 50,
        "tools_tokens": 400,
        "context_window": window,
        "context_usage_ratio": round(tokens / window, 4),
        "remaining_context_tokens": window - tokens,
        "summary_trigger_tokens": trigger,
        "summary_pressure_ratio": ratio,
        "summary_active": False,
    }


def write_token_usage(conversation, usage: dict[str, Any]) -> None:
    """Write ``token_usage`` through the state repository, as the token-usage middleware would."""
    from agent_platform.runtime.graph import state_graph_for
    from agent_platform.runtime.state_repository import AgentStateRepository

    AgentStateRepository(state_graph_for(conversation), conversation.thread_id).update({"token_usage": usage})
