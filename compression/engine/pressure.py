"""The pressure figures of a thread's next model request (SPEC 7). One function computes them, for the
token-usage middleware after every model call and for the services after a compression or an undo.

Token figures here are corrected by the model's calibration (``calibration``: reported prompt tokens /
our estimate, learned per model); ``system_tokens`` and ``tools_tokens`` stay raw estimates, as parts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import BaseMessage

from compression.engine.calibration import NEUTRAL, Calibration
from compression.engine.cutoff import is_summary_message
from compression.engine.forced import messages_tokens
from compression.engine.history import SUMMARY_EVENT_KEY, effective_messages, valid_event
from compression.engine.state import TOKEN_USAGE_KEY
from compression.engine.tokens import TokenProfile, estimate_message

# token_usage fields that describe the last model call; after a compression they no longer hold.
STALE_CONTEXT_FIELDS = (
    "llm_input_tokens",
    "llm_message_count",
    "last_call_usage",
    "context_usage_ratio",
    "remaining_context_tokens",
)


def ratio(value: int, of: int | None) -> float | None:
    return round(value / of, 4) if of else None


def pressure_figures(
    *,
    next_input_tokens: int,
    visible: Sequence[BaseMessage],
    trigger_tokens: int | None,
    context_window: int | None,
    profile: TokenProfile,
    calibration: Calibration = NEUTRAL,
) -> dict[str, Any]:
    """The figures of the next request: its size against the trigger ``T`` and whether it starts with
    a summary (``visible`` is the message list the model sees, summary first when there is one).
    ``next_input_tokens`` is our raw estimate; the figures are corrected by ``calibration``."""
    summary_active = bool(visible) and is_summary_message(visible[0])
    next_tokens = calibration.corrected(next_input_tokens)
    summary_tokens = estimate_message(visible[0], profile) if summary_active else 0
    return {
        "next_llm_input_tokens": next_tokens,
        "context_window": context_window,
        "summary_trigger_tokens": trigger_tokens,
        "summary_pressure_ratio": ratio(next_tokens, trigger_tokens),
        "summary_active": summary_active,
        "summary_message_tokens": calibration.corrected(summary_tokens),
        "calibration": calibration.as_dict(),
    }


def refreshed_usage(
    values: Mapping[str, Any],
    update: Mapping[str, Any],
    *,
    profile: TokenProfile,
    trigger_tokens: int | None,
    context_window: int | None,
    result: Mapping[str, Any],
    now: datetime,
    calibration: Calibration = NEUTRAL,
) -> dict[str, Any]:
    """``token_usage`` after a compression or an undo (``update``): last-call fields dropped (``None``
    deletes them in the merge reducer), the next request re-estimated, the result recorded."""
    previous = dict(values.get(TOKEN_USAGE_KEY) or {})
    event = valid_event(update.get(SUMMARY_EVENT_KEY))
    visible = effective_messages(list(values.get("messages") or []), event)
    overhead = int(previous.get("system_tokens") or 0) + int(previous.get("tools_tokens") or 0)
    usage: dict[str, Any] = dict.fromkeys(STALE_CONTEXT_FIELDS)
    usage.update(
        pressure_figures(
            next_input_tokens=overhead + messages_tokens(visible, profile),
            visible=visible,
            trigger_tokens=trigger_tokens,
            context_window=context_window,
            profile=profile,
            calibration=calibration,
        ),
        compression=dict(result),
        measured_at=now.isoformat(),
    )
    return usage
