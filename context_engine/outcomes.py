"""How a compression ended, in one vocabulary for the event, the audit record, the admin and the page.

``compacted``: large tool results saved to files brought the request under the trigger.
``summarized``: a summary of older history brought it under the trigger.
``no_change_needed``: nothing needed folding (a manual request on a thread with too little history).
``could_not_reach_budget``: the request still went out at or above the trigger; ``reason`` says why.

A no-op is a ``completed`` compression whose outcome says so, never a fourth status (SPEC 12).

The reason is a code with its figures (``{"code", "tokens", "trigger", "messages"}``), so each
reader renders it in its own language (``compression.outcomes`` has the words).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from context_engine.summary.cutoff import is_summary_message
from context_engine.tokens.messages import TokenProfile, estimate_message

COMPACTED = "compacted"
SUMMARIZED = "summarized"
NO_CHANGE = "no_change_needed"
BUDGET_UNREACHABLE = "could_not_reach_budget"

# Reason codes.
INSUFFICIENT_HISTORY = "insufficient_history"  # no change: the kept recent messages are all there is
SPEND_GUARD = "spend_guard"  # the hourly summary allowance held the summary back (issue 14)
SUMMARY_NOT_SMALLER = "summary_not_smaller"  # the summary would not have been smaller than what it folds
LATEST_MESSAGE_TOO_LARGE = "latest_message_too_large"
MESSAGE_TOO_LARGE = "message_too_large"
KEPT_MESSAGES_TOO_LARGE = "kept_messages_too_large"
OVERHEAD_TOO_LARGE = "overhead_too_large"


def outcome_of(*, folded: str | None, after_tokens: int | None, trigger_tokens: int | None) -> str:
    """The outcome of a compression that ``folded`` (``"compaction"``, ``"summary"`` or ``None`` for
    nothing) and left a request of ``after_tokens`` against ``trigger_tokens``."""
    if after_tokens is not None and trigger_tokens and after_tokens >= trigger_tokens:
        return BUDGET_UNREACHABLE
    if folded == "summary":
        return SUMMARIZED
    if folded == "compaction":
        return COMPACTED
    return NO_CHANGE


def unreachable_reason(
    kept: Sequence[BaseMessage], *, overhead_tokens: int, trigger_tokens: int, profile: TokenProfile
) -> dict[str, Any]:
    """Why a request made of ``kept`` (the messages no step could fold) plus ``overhead_tokens`` (system
    prompt, tool schemas) stays at or above the trigger: one message alone, the fixed overhead alone,
    or the kept messages together."""
    sizes = [estimate_message(message, profile) for message in kept]
    largest = max(range(len(sizes)), key=sizes.__getitem__, default=None)
    if largest is not None and sizes[largest] >= trigger_tokens:
        code = LATEST_MESSAGE_TOO_LARGE if largest == len(sizes) - 1 else MESSAGE_TOO_LARGE
        return {"code": code, "tokens": sizes[largest], "trigger": trigger_tokens}
    if overhead_tokens >= trigger_tokens:
        return {"code": OVERHEAD_TOO_LARGE, "tokens": overhead_tokens, "trigger": trigger_tokens}
    # The messages the agent keeps, as its setting counts them: a summary leading them is not one.
    summary = 1 if kept and is_summary_message(kept[0]) else 0
    return {
        "code": KEPT_MESSAGES_TOO_LARGE,
        "tokens": overhead_tokens + sum(sizes),
        "messages": len(sizes) - summary,
        "trigger": trigger_tokens,
    }


def ended(
    *,
    folded: str | None,
    after_tokens: int,
    sent: Sequence[BaseMessage],
    overhead_tokens: int,
    trigger_tokens: int,
    profile: TokenProfile,
) -> tuple[str, dict[str, Any] | None]:
    """The outcome of a compression that folded ``folded`` and sent ``sent`` (``after_tokens`` in all), and
    why it could not reach the budget when it could not (else ``None``)."""
    outcome = outcome_of(folded=folded, after_tokens=after_tokens, trigger_tokens=trigger_tokens)
    if outcome != BUDGET_UNREACHABLE:
        return outcome, None
    reason = unreachable_reason(
        sent, overhead_tokens=overhead_tokens, trigger_tokens=trigger_tokens, profile=profile
    )
    return outcome, reason


def not_smaller_reason(*, summary_tokens: int, folded_tokens: int) -> dict[str, Any]:
    """The ``reason_detail`` of a summary not applied because it would not have been smaller than what
    it folds (manual, bulk and automatic paths alike)."""
    return {"code": SUMMARY_NOT_SMALLER, "tokens": summary_tokens, "folded": folded_tokens}
