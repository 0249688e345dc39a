"""The pressure figures of a thread's next model request (SPEC 7, 12). One function computes them
(``pressure_figures``): for the token-usage middleware after every model call, for the services after a
compression or an undo, and for every page at render time (``pressure_now``, on the agent's current
configuration), so no two places ever disagree on a figure.

Token figures are corrected by the model's calibration (``Calibration``: reported prompt tokens / our
estimate, learned per model); ``system_tokens`` and ``tools_tokens`` stay raw estimates, as parts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.messages import BaseMessage

from context_engine.config import CompressionConfig
from context_engine.state import SUMMARY_EVENT_KEY, TOKEN_USAGE_KEY
from context_engine.summary.cutoff import is_summary_message
from context_engine.summary.history import effective_messages, valid_event
from context_engine.tokens.calibration import NEUTRAL, Calibration
from context_engine.tokens.messages import TokenProfile, estimate_message, messages_tokens

# token_usage fields that describe the last model call; after a compression they no longer hold.
STALE_CONTEXT_FIELDS = (
    "llm_input_tokens",
    "llm_message_count",
    "last_call_usage",
    "context_usage_ratio",
    "remaining_context_tokens",
)


# The hint is a derived line for people only; it never triggers anything (0.849 no, 0.85 yes).
HINT_RATIO = 0.85


def tokens_at_ratio(trigger_tokens: int, level: float) -> int:
    """The smallest request size whose pressure ratio (``ratio``: rounded to 4 places) reaches ``level``:
    where a line (the hint, the trigger) sits, in tokens."""
    if trigger_tokens <= 0:
        return 0
    tokens = max(math.floor(trigger_tokens * (level - 0.0001)), 0)  # below it: the ratio is rounded
    while (ratio(tokens, trigger_tokens) or 0) < level:
        tokens += 1
    return tokens


def hint_tokens(trigger_tokens: int) -> int:
    """Where the hint line sits, in tokens."""
    return tokens_at_ratio(trigger_tokens, HINT_RATIO)


def ratio(value: int, of: int | None) -> float | None:
    return round(value / of, 4) if of else None


# A provider figure this far from our own estimate of the same call is a misreport: not trusted.
REPORTED_PLAUSIBLE = (0.5, 2.0)
BASIS_REPORTED, BASIS_ESTIMATED = "reported", "estimated"


@dataclass(frozen=True)
class LastCall:
    """The latest model call's input: our raw estimate of it, and what the provider reported."""

    estimated: int | None = None
    reported: int | None = None


NO_CALL = LastCall()


def pressure_figures(
    *,
    next_input_tokens: int,
    trigger_tokens: int | None,
    context_window: int | None,
    visible: Sequence[BaseMessage] | None = None,
    profile: TokenProfile | None = None,
    last_call: LastCall = NO_CALL,
    calibration: Calibration = NEUTRAL,
) -> dict[str, Any]:
    """THE pressure figures of the next request (SPEC 7 and 12): its size against the trigger ``T``
    and the window. Every figure the platform shows comes from here.

    ``next_input_tokens`` is the platform's raw estimate of the next request; ``last_call`` the raw
    estimate of the latest model call's input and what the provider reported for that call. When the report is plausible, the size is anchored on it: reported prompt
    tokens + the (calibrated) estimate of what was added since. Otherwise it is the calibrated estimate.
    ``visible`` (the messages the model sees, summary first) adds ``summary_active`` and
    ``summary_message_tokens``.
    """
    estimate = calibration.corrected(next_input_tokens)
    figures: dict[str, Any] = {
        "estimated_next_llm_input_tokens": next_input_tokens,
        "pressure_basis": BASIS_ESTIMATED,
        "reported_input_tokens": None,
        "estimated_since_tokens": None,
        "calibration": calibration.as_dict(),
    }
    tokens = estimate
    if _plausible(last_call.reported, last_call.estimated):
        since = calibration.corrected(max(next_input_tokens - int(last_call.estimated or 0), 0))
        tokens = int(last_call.reported or 0) + since
        figures.update(
            pressure_basis=BASIS_REPORTED,
            reported_input_tokens=last_call.reported,
            estimated_since_tokens=since,
        )
    figures.update(
        next_llm_input_tokens=tokens,
        context_window=context_window,
        summary_trigger_tokens=trigger_tokens,
        summary_pressure_ratio=ratio(tokens, trigger_tokens),
    )
    if visible is not None and profile is not None:
        summary_active = bool(visible) and is_summary_message(visible[0])
        figures.update(
            summary_active=summary_active,
            summary_message_tokens=(
                calibration.corrected(estimate_message(visible[0], profile)) if summary_active else 0
            ),
        )
    return figures


def usage_overhead(token_usage: Mapping[str, Any] | None, profile: TokenProfile) -> int:
    """The part of a request besides its messages, as the last measurement found it: system prompt,
    tool schemas and reply priming (what the middleware's estimate adds to the messages)."""
    usage = token_usage or {}
    return (
        int(usage.get("system_tokens") or 0)
        + int(usage.get("tools_tokens") or 0)
        + math.ceil(profile.reply_overhead)
    )


def refreshed_usage(
    values: Mapping[str, Any],
    update: Mapping[str, Any],
    *,
    config: CompressionConfig,
    result: Mapping[str, Any] | None,
    now: datetime,
    calibration: Calibration = NEUTRAL,
) -> dict[str, Any]:
    """``token_usage`` after a compression or an undo (``update``): last-call fields dropped (``None``
    deletes them in the merge reducer), the next request re-estimated, the result recorded. With no
    ``result`` (a pin bringing a folded message back), the last compression's result stays."""
    event = valid_event(update.get(SUMMARY_EVENT_KEY))
    visible = effective_messages(list(values.get("messages") or []), event)
    profile = config.profile
    overhead = usage_overhead(values.get(TOKEN_USAGE_KEY), profile)
    usage: dict[str, Any] = dict.fromkeys(STALE_CONTEXT_FIELDS)
    usage.update(
        pressure_figures(
            next_input_tokens=overhead + messages_tokens(visible, profile),
            visible=visible,
            trigger_tokens=config.trigger_tokens,
            context_window=config.context_window,
            profile=profile,
            calibration=calibration,
        ),
        measured_at=now.isoformat(),
    )
    if result is not None:
        usage["compression"] = dict(result)
    return usage


def pressure_now(
    token_usage: Mapping[str, Any] | None,
    *,
    trigger_tokens: int | None,
    context_window: int | None,
    calibration: Calibration | None = None,
) -> dict[str, Any]:
    """The figures of the next request as of now: the last measurement (``token_usage``) on the
    agent's current configuration, so a retuned trigger shows at once. ``{}`` before any measurement.
    ``calibration`` defaults to the one the measurement was made with (recorded in it)."""
    usage = token_usage or {}
    if calibration is None:
        calibration = Calibration.from_dict(usage.get("calibration"))
    estimated = _count(usage.get("estimated_next_llm_input_tokens"))
    if estimated is None:
        estimated = _count(usage.get("next_llm_input_tokens"))
    if estimated is None:
        return {}
    reported = (
        (usage.get("last_call_usage") or {}).get("input_tokens") if usage.get("last_call_usage") else None
    )
    return pressure_figures(
        next_input_tokens=estimated,
        trigger_tokens=trigger_tokens,
        context_window=context_window,
        last_call=LastCall(_count(usage.get("llm_input_tokens")), _count(reported)),
        calibration=calibration,
    )


def _plausible(reported: int | None, estimated: int | None) -> bool:
    if not reported or not estimated:
        return False
    low, high = REPORTED_PLAUSIBLE
    return low <= reported / estimated <= high


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
