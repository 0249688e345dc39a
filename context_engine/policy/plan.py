"""One decision per look at a request (SPEC 6, 8): the shells (the agent middleware, the manual path)
measure, call ``plan``, match on the frozen decision it returns, then carry out its effects; none of them
decides anything itself. The ladder, each rung only when the one before does not suffice:

* ``Pass``: below ``T`` and within the window, the request goes out as it is;
* ``Compact``: large tool results are saved and replaced by receipts (``send``: the compacted candidate
  that goes out; ``None`` until compaction has run, or when none fits);
* ``Summarize``: the history before ``cutoff`` is folded into a summary (``tail_cap``, ``budget``): the
  model's, or the extractive one directly while refused summaries pause the model (``paused_until``);
* ``HeldBack``: the spend guard refused the summary call, the compacted view goes out without one;
* ``Fallback``: no summary is applied (``reason``); the compacted view goes out if it fits.

``plan`` is a pure function of a ``Measure`` (sizes, the overflow, the fold) and the agent's config;
the budgets come from ``policy.trigger``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from context_engine.config import CompressionConfig
from context_engine.policy import trigger
from context_engine.summary.breaker import paused_until
from context_engine.summary.spend_guard import GuardDecision, guard_check


class FallbackReason(StrEnum):
    NOTHING_TO_FOLD = "nothing_to_fold"  # every message is in the kept tail
    NOT_SMALLER = "summary_not_smaller"  # the summary would not have been smaller than what it folds
    SUMMARY_FAILED = "summary_failed"  # the summary call or its history section failed


@dataclass(frozen=True)
class Sizes:
    """A request's size: our own estimate (``raw``) and the model's calibrated one (``tokens``)."""

    raw: int
    tokens: int


@dataclass(frozen=True)
class Fold:
    """The fold a summary would make of the compacted view: ``cutoff`` (0: nothing to fold), the
    tokens it folds, and the thread's spend-guard ledger the call would enter."""

    cutoff: int
    folded_tokens: int
    ledger: Iterable[Mapping[str, Any]] | None
    now: datetime
    refusals: Iterable[Mapping[str, Any]] | None = None  # the circuit breaker's (``summary.breaker``)


@dataclass(frozen=True)
class Measure:
    """What the shell knows when it asks: the request as it is; after an overflow, the size the provider
    rejected; after compaction, each compacted candidate's size (in the order they would go out) and
    the fold of the first. ``forced``: the manual path, where no threshold applies."""

    request: Sizes
    factor: float = 1.0  # the calibration: our estimate x factor = the model's tokens
    overflowed_at: int | None = None
    compacted: tuple[Sizes, ...] | None = None
    fold: Fold | None = None
    forced: bool = False


@dataclass(frozen=True)
class Pass:
    pass


@dataclass(frozen=True)
class Compact:
    send: int | None = None  # the index of the compacted candidate that goes out


@dataclass(frozen=True)
class Summarize:
    cutoff: int  # local into the compacted view
    tail_cap: int  # most tokens (our estimate's units) the verbatim tail keeps
    budget: int  # input tokens of the summary call, by our raw estimate
    paused_until: datetime | None = None  # model summaries paused (the breaker): the extractive one, no call


@dataclass(frozen=True)
class HeldBack:
    guard: GuardDecision


@dataclass(frozen=True)
class Fallback:
    reason: FallbackReason


Decision = Pass | Compact | Summarize | HeldBack | Fallback


def tail_cap(config: CompressionConfig, measure: Measure) -> int:
    """The kept tail's cap in our estimate's units: the tail is cut to T (calibration may move it), not to
    the window."""
    return int(trigger.tail_cap(config, overflowed_at=measure.overflowed_at) / measure.factor)


def summary_budget(config: CompressionConfig, measure: Measure) -> int:
    """The summary call's input, cut to the window in both measures whatever the calibration (never more
    than half of what the provider just rejected)."""
    budget = trigger.summary_budget(config, overflowed_at=measure.overflowed_at)
    return trigger.raw_within(budget, factor=measure.factor)


def plan(config: CompressionConfig, measure: Measure) -> Decision:
    """The next step for ``measure`` (see the module docstring)."""
    overflowed = measure.overflowed_at is not None
    if measure.compacted is None and not measure.forced:
        needs = trigger.needs_compression(
            measure.request.tokens,
            trigger=config.trigger_tokens,
            overflowed=overflowed,
            raw=measure.request.raw,
            context_window=config.context_window,
        )
        return Compact() if needs else Pass()
    for index, sizes in enumerate(measure.compacted or ()):
        if not measure.forced and trigger.compaction_suffices(
            sizes.tokens,
            trigger=config.trigger_tokens,
            overflowed=overflowed,
            raw=sizes.raw,
            context_window=config.context_window,
        ):
            return Compact(send=index)
    if measure.fold is None:
        return Compact()
    return _fold(config, measure, measure.fold)


def _fold(config: CompressionConfig, measure: Measure, fold: Fold) -> Decision:
    budget = summary_budget(config, measure)
    if fold.cutoff <= 0:  # the guard is not even asked
        return Fallback(FallbackReason.NOTHING_TO_FOLD)
    paused = paused_until(fold.refusals, limits=config.breaker, now=fold.now)
    if paused is not None:  # no call to pay for: the extractive summary, whatever the guard says
        return Summarize(fold.cutoff, tail_cap(config, measure), budget, paused_until=paused)
    guard = guard_check(
        fold.ledger, limits=config.spend, now=fold.now, input_tokens=min(fold.folded_tokens, budget)
    )
    step = trigger.summary_step(cutoff=fold.cutoff, guard_allowed=guard.allowed)
    if step is trigger.SummaryStep.HELD_BACK:
        return HeldBack(guard)
    return Summarize(fold.cutoff, tail_cap(config, measure), budget)
