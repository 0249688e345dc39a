"""Helpers of the page tests: token_usage figures at a chosen pressure, seeded into a thread's state."""

from __future__ import annotations

from typing import Any

from django.urls import reverse


def usage_at(ratio: float, *, trigger: int = 102400, window: int = 128000) -> dict[str, Any]:
    """A ``token_usage`` (SPEC 7) whose ``summary_pressure_ratio`` is exactly ``ratio``."""
    tokens = round(ratio * trigger)
    return {
        "llm_input_tokens": tokens - 100,
        "next_llm_input_tokens": tokens,
        "estimated_next_llm_input_tokens": tokens,
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
    """Write ``token_usage`` through the state repository, as the token-usage middleware would, and copy
    the result onto the thread's row, as its run would."""
    from agent_platform.runtime.graph import state_graph_for
    from agent_platform.runtime.state_repository import AgentStateRepository
    from conversations.services.pressure import conversation_pressure_update

    repository = AgentStateRepository(state_graph_for(conversation), conversation.thread_id)
    repository.update({"token_usage": usage})
    whole = repository.get_values().get("token_usage")
    conversation_pressure_update(conversation_id=conversation.pk, token_usage=whole)


RECEIPT = (
    "[Tool result saved]\n"
    "Tool: web_search\n"
    "Approx tokens: 5120\n"
    "SHA-256: " + "a" * 64 + "\n"
    "Full output path: outputs/large_tool_results/web_search-0123456789abcdef.txt\n"
    "\n"
    "Output preview:\n"
    "[HEAD]\nfirst lines\n"
    "[Truncated 9000 chars. Read the full output from the saved file.]"
)


def detail_url(thread) -> str:
    return reverse("conversations:thread-detail", kwargs={"thread_id": thread.thread_id})


def state_url(thread) -> str:
    return reverse("conversations:fragment-state", kwargs={"thread_id": thread.thread_id})


def file_url(thread, path: str) -> str:
    return reverse("conversations:workdir-file", kwargs={"thread_id": thread.thread_id, "path": path})
