"""The agent-state keys compression reads and writes, and their pure reducers (one home for both)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compression.engine.history import SESSION_ID_KEY, SUMMARY_EVENT_KEY, SummarizationEvent

SUMMARY_EVENTS_KEY = "_summary_events"
TOKEN_USAGE_KEY = "token_usage"
SUMMARY_USAGE_KEY = "summary_model_usage"
MAX_SUMMARY_EVENTS = 10
# The run config's ``configurable`` key carrying the thread's pinned message ids (read at run start).
PINNED_IDS_CONFIG_KEY = "pinned_message_ids"
SUMMARY_CALLS_KEY = "_summary_calls"  # the spend guard's ledger: [{at, input_tokens}] of the last hour

__all__ = [
    "MAX_SUMMARY_EVENTS",
    "PINNED_IDS_CONFIG_KEY",
    "SESSION_ID_KEY",
    "SUMMARY_CALLS_KEY",
    "SUMMARY_EVENTS_KEY",
    "SUMMARY_EVENT_KEY",
    "SUMMARY_USAGE_KEY",
    "TOKEN_USAGE_KEY",
    "merge_token_usage",
    "push_summary_event",
]


def merge_token_usage(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Shallow merge, so the two middlewares (and manual compression) can each write their own keys in
    the same step; a key written as ``None`` is dropped (that is how stale fields are cleared)."""
    merged = dict(left or {})
    for key, value in (right or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def push_summary_event(
    history: list[SummarizationEvent | None] | None, previous: SummarizationEvent | None
) -> list[SummarizationEvent | None]:
    """The bounded undo history (newest last) after ``previous`` is replaced; ``None`` stands for
    "no summary yet", so undoing the first summary restores the raw conversation."""
    return [*(history or ()), previous][-MAX_SUMMARY_EVENTS:]
