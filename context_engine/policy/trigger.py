"""Every decision of automatic compression, as plain functions of counts, the config and flags (SPEC 6):
below ``T`` a request passes; at or above it (or once the provider reported an overflow) it is
compacted; a compacted view still too large is summarized, unless there is no older history to fold
or the spend guard holds the summary back; a held-back view that would overflow the window has its
oldest messages dropped; after a failed summary the compacted view goes out only if it fits. The
middleware carries these out (``context_engine.middleware.compression``); the manual path and the
preview share the budgets (``tail_cap``, ``summary_budget``).

Sizes compared with ``T`` are in the model's tokens (calibrated); the budgets returned here are too, and
callers convert them to estimate units where they cut by our estimate. The window is another matter:
calibration moves the trigger, never the window check, so a request goes to the model only when
neither our raw estimate nor the calibrated one reaches the window (``fits_window``), and a budget cut
to the window is cut in both measures (``raw_within``)."""

from __future__ import annotations

from enum import StrEnum

from context_engine.config import CompressionConfig

# The summary call may read most of the window; the rest is room for the summary it writes.
SUMMARY_INPUT_SHARE = 0.75
# How much of the model's window a request held back by the spend guard may fill before the oldest
# messages are dropped from view (room for the reply and for estimate error).
HELD_BACK_WINDOW_SHARE = 0.9


class SummaryStep(StrEnum):
    """What happens to a compacted view that still does not fit."""

    NOTHING_TO_FOLD = "nothing_to_fold"  # every message is in the kept tail: send the compacted view
    HELD_BACK = "held_back"  # the spend guard refused the call: send compacted, drop only to fit
    SUMMARIZE = "summarize"


def needs_compression(
    tokens: int,
    *,
    trigger: int,
    overflowed: bool = False,
    raw: int | None = None,
    context_window: int | None = None,
) -> bool:
    """At or above ``T`` (SPEC 6: ``>=``), or the provider already said the request is too long, or it
    does not fit the window by our raw estimate (``raw``, defaults to ``tokens``) or the calibrated one."""
    return (
        overflowed
        or tokens >= trigger
        or not fits_window(tokens if raw is None else raw, tokens, limit=context_window)
    )


def compaction_suffices(
    tokens: int,
    *,
    trigger: int,
    overflowed: bool,
    raw: int | None = None,
    context_window: int | None = None,
) -> bool:
    """The compacted view goes out as it is: below ``T``, within the window by both measures (``raw``
    defaults to ``tokens``), and nothing overflowed yet (after an overflow a compacted view is never
    retried as is: it is summarized to fit what the provider accepted)."""
    return (
        not overflowed
        and tokens < trigger
        and fits_window(tokens if raw is None else raw, tokens, limit=context_window)
    )


def summary_step(*, cutoff: int, guard_allowed: bool) -> SummaryStep:
    """After compaction did not suffice: fold the history before ``cutoff``, if there is any and the
    spend guard allows a summary call."""
    if cutoff <= 0:
        return SummaryStep.NOTHING_TO_FOLD
    if not guard_allowed:
        return SummaryStep.HELD_BACK
    return SummaryStep.SUMMARIZE


def tail_cap(config: CompressionConfig, *, overflowed_at: int | None = None) -> int:
    """Most tokens the verbatim tail may keep after a summary: half of T, or of what the provider
    just rejected as too long when that is smaller (SPEC 6 step 4)."""
    limit = config.trigger_tokens if overflowed_at is None else min(config.trigger_tokens, overflowed_at)
    return limit // 2


def summary_budget(config: CompressionConfig, *, overflowed_at: int | None = None) -> int:
    """Input tokens for the summary call: most of the window (room left for the summary itself),
    at most half of what the provider just rejected as too long."""
    window = config.context_window
    budget = int(window * SUMMARY_INPUT_SHARE) if window else config.trigger_tokens
    return budget if overflowed_at is None else min(budget, overflowed_at // 2)


def window_limit(*, context_window: int | None, overflowed_at: int | None) -> int | None:
    """Tokens a request may take before the provider would reject it (with room for the reply): a share
    of the window, and of what the provider just rejected; None when neither is known."""
    limits = [int(context_window * HELD_BACK_WINDOW_SHARE)] if context_window else []
    if overflowed_at is not None:
        limits.append(int(overflowed_at * HELD_BACK_WINDOW_SHARE))
    return min(limits) if limits else None


def fits_window(raw: int, calibrated: int, *, limit: int | None) -> bool:
    """May a request of ``raw`` tokens by our own estimate (``calibrated`` once corrected by the model's
    calibration) go to a window of ``limit`` tokens? Only when neither figure reaches it (a calibration
    learned from a misreporting provider must never send a request our estimate says is too long);
    always when no limit is known."""
    return limit is None or max(raw, calibrated) < limit


def failed_figure(raw: int, calibrated: int, *, limit: int | None) -> int:
    """The size an account of a window check states: our raw estimate when it reached ``limit`` (the
    check that failed first, whatever the calibration), else the calibrated one when that did, else
    the raw one (no figure of ours failed: the provider refused a request the platform put under it)."""
    if limit is not None and raw < limit <= calibrated:
        return calibrated
    return raw


def send_limit(*, context_window: int | None, overflowed_at: int | None = None) -> int | None:
    """The window a compressed request must stay under: the model's, and what the provider already
    rejected as too long; None when neither is known."""
    limits = [limit for limit in (context_window, overflowed_at) if limit is not None]
    return min(limits) if limits else None


def raw_within(limit: int, *, factor: float) -> int:
    """The most tokens by our raw estimate that a request may take so that neither that figure nor its
    calibrated one (``round(raw * factor)``) reaches ``limit``."""
    return max(min(limit - 1, int((limit - 1) / factor)), 0)


def held_back_fits(tokens: int, *, limit: int | None, raw: int | None = None) -> bool:
    """A view whose summary was held back goes out whole when it is under the window limit by both
    measures (``raw`` defaults to ``tokens``), or no limit is known; otherwise its oldest unpinned
    messages are dropped from view first."""
    return fits_window(tokens if raw is None else raw, tokens, limit=limit)


def fallback_fits(
    tokens: int, *, context_window: int | None, overflowed_at: int | None, raw: int | None = None
) -> bool:
    """After a failed summary the compacted view goes out only if it can fit, by both measures (``raw``
    defaults to ``tokens``): under the window and under what the provider already rejected."""
    limit = send_limit(context_window=context_window, overflowed_at=overflowed_at)
    return fits_window(tokens if raw is None else raw, tokens, limit=limit)


def summary_shrinks(*, summary_tokens: int, folded_tokens: int) -> bool:
    """A compression never makes the request bigger: a summary is applied only when its message is
    smaller than the messages it folds (the pinned messages it keeps are in the request either way)."""
    return summary_tokens < folded_tokens
