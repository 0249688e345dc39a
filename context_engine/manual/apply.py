"""Forced compression (SPEC 8: the manual, bulk and admin paths), as a step generator over the engine:
state values in, a state update and a result out. Services run it under the thread's row lock; it never
touches the ORM.

Effective messages → compaction (staged: nothing is written for a ``no_op``) → pair-safe cutoff →
strict summary → history file (required) → ``_summarization_event`` update. No threshold applies.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage

from context_engine import outcomes
from context_engine.config import CompressionConfig
from context_engine.errors import NothingToUndo, SummaryNotSmaller
from context_engine.manual.preview import forced_plan
from context_engine.policy.plan import Fold, HeldBack, Measure, Sizes, Summarize, plan
from context_engine.state import (
    SUMMARY_CALLS_KEY,
    SUMMARY_EVENT_KEY,
    SUMMARY_EVENTS_KEY,
    SUMMARY_REFUSALS_KEY,
)
from context_engine.steps import Blocking, Steps
from context_engine.store import ResultStore, StagedStore
from context_engine.summary.call import Span, SummaryOutcome, ledger_update, summarize_span, summary_update
from context_engine.summary.fold_plan import FoldPlan
from context_engine.summary.history import effective_messages, valid_event
from context_engine.tokens.calibration import NEUTRAL, Calibration
from context_engine.tokens.messages import TokenProfile, messages_tokens

STATUS_COMPLETED = "completed"
STATUS_NO_OP = "no_op"
REASON_INSUFFICIENT_HISTORY = "insufficient_history"
REASON_SPEND_GUARD = "spend_guard"
REASON_NOT_SMALLER = "summary_not_smaller"


@dataclass(frozen=True)
class ManualCompression:
    status: str
    before_tokens: int
    after_tokens: int
    compressed_messages: int = 0
    file_path: str | None = None
    reason: str | None = None
    update: dict[str, Any] = field(default_factory=dict)
    cutoff_index: int | None = None
    summary_usage: dict[str, Any] | None = None
    saved_files: tuple[str, ...] = ()
    pinned_messages: int = 0  # pinned messages kept verbatim after the summary
    summary_tokens: int | None = None  # the new summary message's estimate
    folded_tokens: int | None = None  # what the summary folded (the preview fits summary sizes on it)
    loss_report: dict[str, Any] = field(default_factory=dict)
    spend_guard: dict[str, Any] = field(default_factory=dict)  # the guard's decision when it held back
    outcome: str = ""  # context_engine.outcomes
    reason_detail: dict[str, Any] | None = None  # why, for a ``no_change_needed`` or an unreachable budget
    history_section: str = ""  # the section appended to ``file_path`` (taken back if never applied)

    def body(self) -> dict[str, Any]:
        """The API response: ``{status, before_tokens, after_tokens, compressed_messages, file_path, reason,
        pinned_messages, summary_tokens, loss_report, spend_guard, outcome, reason_detail}`` (``file_path`` is
        null for a ``no_op``, ``reason`` null unless it is one; ``loss_report``, ``spend_guard`` and
        ``reason_detail`` null when they do not apply)."""
        body: dict[str, Any] = {
            "status": self.status,
            "before_tokens": self.before_tokens,
            "after_tokens": self.after_tokens,
            "compressed_messages": self.compressed_messages,
            "file_path": self.file_path,
            "reason": self.reason,
            "pinned_messages": self.pinned_messages,
            "summary_tokens": self.summary_tokens,
            "folded_tokens": self.folded_tokens,
            "loss_report": self.loss_report or None,
            "spend_guard": self.spend_guard or None,
            "outcome": self.outcome,
            "reason_detail": self.reason_detail,
        }
        return body


@dataclass(frozen=True)
class Reading:
    """What the caller read of the thread besides its state: its pinned ids, the model's calibration,
    the request's fixed part (system prompt, tool schemas: ``pressure.usage_overhead``) and, when the
    meter has one, its own figure for the request now (it may be anchored on reported usage)."""

    pinned_ids: Collection[str] = ()
    calibration: Calibration = NEUTRAL
    overhead_tokens: int = 0
    before_tokens: int | None = None


NO_READING = Reading()


def force_summarize(
    values: Mapping[str, Any],
    *,
    config: CompressionConfig,
    store: ResultStore,
    profile: TokenProfile,
    now: datetime | None = None,
    reading: Reading = NO_READING,
    spent: list[int] | None = None,
) -> Steps[ManualCompression]:
    """Fold what ``plan_fold`` says (the preview shows the same plan), as ``policy.plan`` decides: a
    ``no_op`` when there is nothing to fold or the spend guard holds the summary back. Token figures are
    request sizes as the meter shows them (``reading``), corrected by the model's calibration; budgets
    compared with our own estimates are converted back to their units. ``spent`` receives the input
    tokens of each summary call made, so a caller can bill a failed one.

    A compression never makes the request bigger: a summary that would not be smaller than what it
    folds is not applied (a ``no_op`` with reason ``summary_not_smaller``; only the spend guard's
    ledger records the call)."""
    now = now or datetime.now(UTC)
    staged = StagedStore(store)
    calibration = reading.calibration
    fold_plan = yield Blocking(
        partial(
            forced_plan,
            values,
            config=config,
            store=staged,
            profile=profile,
            pinned_ids=reading.pinned_ids,
            calibration=calibration,
        )
    )
    decision, before = _decided(fold_plan, values, config=config, reading=reading, now=now)
    if isinstance(decision, ManualCompression):
        return decision
    # The summarized span's receipts point at these files: they must exist before the history does.
    saved = tuple((yield Blocking(staged.flush)))
    applying = _Applying(values, fold_plan, reading, before, now)
    spent = spent if spent is not None else []
    return (yield from _summarize(applying, decision, config=config, store=store, saved=saved, spent=spent))


def forced_no_op(
    values: Mapping[str, Any],
    *,
    config: CompressionConfig,
    store: ResultStore,
    profile: TokenProfile,
    now: datetime | None = None,
    reading: Reading = NO_READING,
) -> ManualCompression | None:
    """The ``no_op`` that ``force_summarize`` would end in on ``values``, decided from the stored
    estimates alone (no summary call, nothing written: compaction is only staged); ``None`` when it
    would summarize. A caller decides with it, before holding the thread, that a job has nothing to do."""
    fold_plan = forced_plan(
        values,
        config=config,
        store=StagedStore(store),
        profile=profile,
        pinned_ids=reading.pinned_ids,
        calibration=reading.calibration,
    )
    decision, _before = _decided(
        fold_plan, values, config=config, reading=reading, now=now or datetime.now(UTC)
    )
    return decision if isinstance(decision, ManualCompression) else None


def _decided(
    fold_plan: FoldPlan,
    values: Mapping[str, Any],
    *,
    config: CompressionConfig,
    reading: Reading,
    now: datetime,
) -> tuple[Summarize | ManualCompression, int]:
    """``policy.plan``'s decision on the fold plan (a ``Summarize``, or the ``no_op`` to return), and the
    request's size before, as the meter shows it."""
    calibration = reading.calibration
    raw = reading.overhead_tokens + fold_plan.before_tokens
    before = reading.before_tokens if reading.before_tokens is not None else calibration.corrected(raw)
    fold = _fold(fold_plan, values, now=now)
    measure = Measure(Sizes(raw, before), factor=calibration.factor, fold=fold, forced=True)
    match plan(config, measure):
        case Summarize() as decision:
            return decision, before
        case HeldBack(guard=guard):
            held_back = _no_op(
                before,
                REASON_SPEND_GUARD,
                spend_guard=guard.as_dict(),
                outcome=outcomes.outcome_of(
                    folded=None, after_tokens=before, trigger_tokens=config.trigger_tokens
                ),
                reason_detail={"code": outcomes.SPEND_GUARD},
            )
            return held_back, before
    return _nothing_to_fold(fold_plan, before, config=config, overhead_tokens=reading.overhead_tokens), before


def _fold(fold_plan: FoldPlan, values: Mapping[str, Any], *, now: datetime) -> Fold:
    """The fold the plan decides on: its cutoff and size, the spend guard's ledger and the breaker's."""
    folded = messages_tokens(fold_plan.split.folded, fold_plan.profile)
    ledger, refusals = values.get(SUMMARY_CALLS_KEY), values.get(SUMMARY_REFUSALS_KEY)
    return Fold(fold_plan.split.cutoff, folded, ledger, now, refusals)


def _nothing_to_fold(
    fold_plan: FoldPlan, before: int, *, config: CompressionConfig, overhead_tokens: int
) -> ManualCompression:
    """No change needed, unless the request is at the trigger with nothing to fold."""
    ended, why = outcomes.ended(
        folded=None,
        after_tokens=before,
        sent=fold_plan.view,
        overhead_tokens=overhead_tokens,
        trigger_tokens=config.trigger_tokens,
        profile=fold_plan.profile,
    )
    reason_detail = why or {"code": outcomes.INSUFFICIENT_HISTORY}
    return _no_op(before, REASON_INSUFFICIENT_HISTORY, outcome=ended, reason_detail=reason_detail)


@dataclass(frozen=True)
class _Applying:
    """A forced summary about to be made: the state, its plan, what the caller read, the size now."""

    values: Mapping[str, Any]
    plan: FoldPlan
    reading: Reading
    before: int
    now: datetime


def _no_op(before: int, reason: str, **extra: Any) -> ManualCompression:
    return ManualCompression(
        status=STATUS_NO_OP, before_tokens=before, after_tokens=before, reason=reason, **extra
    )


def _summarize(
    applying: _Applying,
    decision: Summarize,
    *,
    config: CompressionConfig,
    store: ResultStore,
    saved: tuple[str, ...],
    spent: list[int],
) -> Steps[ManualCompression]:
    fold_plan, values, now = applying.plan, applying.values, applying.now
    split, effective, pinned_ids = fold_plan.split, fold_plan.effective, fold_plan.pinned_ids
    profile = fold_plan.profile
    span = Span(
        split.folded,
        state=values,
        previous=fold_plan.previous,
        local_cutoff=split.cutoff,
        budget=decision.budget,
        now=now,
        kept=[m for m in effective[: split.cutoff] if m.id in pinned_ids] + effective[split.cutoff :],
        pinned=split.kept_pinned,
        lead=fold_plan.lead,
        # The request holds the folded messages uncompacted (compaction is view-only).
        fold_limit=messages_tokens([m for m in effective[: split.cutoff] if m.id not in pinned_ids], profile),
        paused_until=decision.paused_until,
    )
    try:
        outcome = yield from summarize_span(span, config=config, store=store, profile=profile, spent=spent)
    except SummaryNotSmaller as exc:
        before = applying.before
        return _no_op(
            before,
            REASON_NOT_SMALLER,
            update=ledger_update(values, spent, now=now),
            outcome=outcomes.outcome_of(
                folded=None, after_tokens=before, trigger_tokens=config.trigger_tokens
            ),
            reason_detail=outcomes.not_smaller_reason(
                summary_tokens=exc.summary_tokens, folded_tokens=exc.folded_tokens
            ),
        )
    return _completed(applying, outcome, config=config, saved=saved)


def _completed(
    applying: _Applying, outcome: SummaryOutcome, *, config: CompressionConfig, saved: tuple[str, ...]
) -> ManualCompression:
    fold_plan, overhead, profile = applying.plan, applying.reading.overhead_tokens, applying.plan.profile
    visible = effective_messages(fold_plan.messages, outcome.event)
    after = applying.reading.calibration.corrected(overhead + messages_tokens(visible, profile))
    ended, why = outcomes.ended(
        folded="summary",
        after_tokens=after,
        sent=visible,
        overhead_tokens=overhead,
        trigger_tokens=config.trigger_tokens,
        profile=profile,
    )
    split = fold_plan.split
    return ManualCompression(
        status=STATUS_COMPLETED,
        before_tokens=applying.before,
        after_tokens=after,
        outcome=ended,
        reason_detail=why,
        compressed_messages=len(split.folded),
        file_path=outcome.file_path,
        update=summary_update(applying.values, outcome, fold_plan.previous, now=applying.now),
        cutoff_index=outcome.event["cutoff_index"],
        summary_usage=outcome.usage,
        saved_files=saved,
        pinned_messages=len(split.kept_pinned),
        summary_tokens=outcome.summary_tokens,
        folded_tokens=messages_tokens(split.folded, profile),
        loss_report=outcome.loss_report(),
        history_section=outcome.section,
    )


def undo_update(
    values: Mapping[str, Any],
    *,
    profile: TokenProfile,
    calibration: Calibration = NEUTRAL,
    overhead_tokens: int = 0,
    before_tokens: int | None = None,
) -> tuple[dict[str, Any], int, int]:
    """The update restoring the model-visible history from before the latest summary, with the request
    sizes (``overhead_tokens`` + corrected effective messages) before and after (``before_tokens``, when
    given: the meter's figure now). Raises ``NothingToUndo``."""
    history = list(values.get(SUMMARY_EVENTS_KEY) or [])
    if not history:
        raise NothingToUndo()
    messages: list[BaseMessage] = list(values.get("messages") or [])
    restored = valid_event(history[-1])
    before = messages_tokens(
        effective_messages(messages, valid_event(values.get(SUMMARY_EVENT_KEY))), profile
    )
    after = messages_tokens(effective_messages(messages, restored), profile)
    before = before_tokens if before_tokens is not None else calibration.corrected(overhead_tokens + before)
    after = calibration.corrected(overhead_tokens + after)
    update = {SUMMARY_EVENT_KEY: restored, SUMMARY_EVENTS_KEY: history[:-1]}
    return update, before, after
