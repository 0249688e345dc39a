"""``CompressionMiddleware``: automatic context compression around every model call (SPEC 6).

Below ``T`` the request passes through untouched. At or above it: deterministic compaction of a copy,
then, if still too large (or the provider reported an overflow), a strict summary whose result lives
in ``_summarization_event``; the raw ``messages`` are never deleted. Pinned messages are neither
compacted nor folded; every summary carries a loss report; the spend guard may hold a summary back,
and then the request goes out compacted (with the oldest unpinned messages dropped from view only if
it would not fit the model's window). No request goes out that reaches the window by our raw estimate
or by the calibrated one (``policy.fits_window``); every summary call made, a failed one included,
enters the thread's spend-guard ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, cast

from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage

from context_engine.compaction.clipping import clip_overflow_tail
from context_engine.compaction.horizon import (
    Arrival,
    ArrivalForms,
    Horizon,
    horizon_view,
    low_water_count,
    read_horizon,
)
from context_engine.compaction.tool_results import seen_until
from context_engine.config import CompressionConfig
from context_engine.errors import StoppedAfterSummary, SummaryNotSmaller
from context_engine.events import LEVEL_COMPACTION, LEVEL_SUMMARY
from context_engine.middleware.emitter import Emitter, stream_writer
from context_engine.middleware.held_back import HeldBackSend, Sending, send_held_back
from context_engine.middleware.measure import request_overhead
from context_engine.middleware.memo import CompactionMemo, MessageTotals
from context_engine.middleware.responses import (
    Outgoing,
    persisted,
    send_fallback,
    send_fitting,
    with_ledger,
    with_messages,
    with_update,
)
from context_engine.middleware.run_config import configured_pins, configured_stop
from context_engine.outcomes import not_smaller_reason
from context_engine.policy.overflow import is_context_overflow, provider_limit
from context_engine.policy.plan import (
    Compact,
    Fallback,
    FallbackReason,
    Fold,
    HeldBack,
    Measure,
    Pass,
    Sizes,
    Summarize,
    plan,
    tail_cap,
)
from context_engine.state import (
    COMPACTION_HORIZON_KEY,
    SUMMARY_CALLS_KEY,
    SUMMARY_EVENT_KEY,
    SUMMARY_REFUSALS_KEY,
    CompressionState,
)
from context_engine.steps import Blocking, CallModel, Steps, run_async, run_sync
from context_engine.store import ResultStore
from context_engine.summary.call import Span, SummaryOutcome, ledger_update, summarize_span, summary_update
from context_engine.summary.fold_plan import FoldSplit, fold_split, view_lead
from context_engine.summary.history import effective_messages, history_unappend, valid_event, without_index
from context_engine.summary.pins import pinned_closure, restore_pinned
from context_engine.summary.spend_guard import LedgerSource, OwnState, thread_ledger
from context_engine.tokens.calibration import Calibration, CalibrationMemory, CalibrationSource
from context_engine.tokens.messages import estimate_message, messages_tokens

TRIED_COMPACTION = "saving large tool results to files"
# What the account of a request still too long says was tried, by why no summary was applied.
TRIED = {
    FallbackReason.NOTHING_TO_FOLD: f"{TRIED_COMPACTION}; there was no older history to summarize",
    FallbackReason.NOT_SMALLER: f"{TRIED_COMPACTION}; a summary would not have been smaller than what it folds",
}


@dataclass(frozen=True)
class _Turn:
    """One model call under compression: the request, its effective messages (the current summary
    applied), its fixed part in raw tokens and what has been measured so far; after an overflow, the
    limit the provider stated."""

    request: ModelRequest
    effective: list[BaseMessage]
    previous: Mapping[str, Any] | None
    overhead: int
    measure: Measure
    overflow_limit: int | None = None
    horizon: Horizon | None = None  # compaction in force since the last event (``compaction.horizon``)
    sent: list[BaseMessage] | None = None  # what goes out below ``T`` under that horizon
    arrival: Arrival | None = None  # the arrival forms in it, with the files they saved

    def overflowed(self, at: int, exc: Exception) -> _Turn:
        measure = replace(self.measure, overflowed_at=at)
        return replace(self, measure=measure, overflow_limit=provider_limit(exc))


@dataclass(frozen=True)
class _Folding:
    """The compacted ``view`` split for a summary (``split``), its kept tail after the overflow clip
    (``preserved``, ``replacements``), and the moment it is decided."""

    view: list[BaseMessage]
    split: FoldSplit
    lead: int
    preserved: list[BaseMessage]
    replacements: Sequence[BaseMessage]
    now: datetime
    count: int = 0  # messages of ``view`` shown compacted (the rest in their arrival form)
    pinned: frozenset[str] = frozenset()

    @property
    def fallback(self) -> list[BaseMessage]:
        """The compacted view, clipped, with no summary: what goes out when none is applied."""
        return [*self.view[: self.split.cutoff], *self.preserved]


def _span(turn: _Turn, folding: _Folding, decision: Summarize) -> Span:
    """What the summary of ``folding`` folds and keeps, as the plan's ``decision`` sized it."""
    split = folding.split
    return Span(
        split.folded,
        state=turn.request.state or {},
        previous=turn.previous,
        local_cutoff=split.cutoff,
        budget=decision.budget,
        now=folding.now,
        kept=[*split.kept_pinned, *folding.preserved],
        pinned=split.kept_pinned,
        lead=folding.lead,
        paused_until=decision.paused_until,
    )


_utcnow = partial(datetime.now, UTC)


def _summary_kept(
    state: Mapping[str, Any],
    outcome: SummaryOutcome,
    turn: _Turn,
    folding: _Folding,
    final: list[BaseMessage],
) -> dict[str, Any]:
    """The state update that keeps a summary, with the new horizon: what the summary request showed
    compacted stays so behind the summary (kept whether or not the request it made room for came back)."""
    update = summary_update(state, outcome, turn.previous, now=folding.now)
    arrival = len(folding.view) - folding.count  # the kept tail's last messages, in arrival form
    horizon = Horizon(max(len(final) - arrival, 0), outcome.event["cutoff_index"], folding.pinned)
    update[COMPACTION_HORIZON_KEY] = horizon.as_state()
    return update


class CompressionMiddleware(AgentMiddleware[CompressionState]):
    state_schema = CompressionState

    def __init__(
        self,
        *,
        config: CompressionConfig,
        store: ResultStore,
        summary_model: BaseChatModel,
        calibration: CalibrationSource | None = None,
        now: Callable[[], datetime] = _utcnow,
        pins: Callable[[], Collection[str]] | None = None,
        ledger: LedgerSource | None = None,
    ) -> None:
        """``pins`` returns the ids of the thread's pinned messages, once per compression (only at or
        above ``T``); without it they are read from the run config (``PINNED_IDS_CONFIG_KEY``).
        ``ledger`` keeps the thread's spend-guard ledger: the agent's own state by default, shared
        between a parent and its sub-agents otherwise (``spend_guard.SharedLedger``)."""
        super().__init__()
        self.ledger = ledger if ledger is not None else OwnState()
        self.pins, self.config, self.store, self.summary_model = pins, config, store, summary_model
        self.profile = config.profile
        # The model's correction of our estimate, learned from reported usage by TokenUsageMiddleware
        # (the same source): every size compared with T or a budget here is a corrected one.
        self.calibration = calibration if calibration is not None else CalibrationMemory()
        self.now = now
        self._effective_totals = MessageTotals(self.profile)
        self._view_totals = MessageTotals(self.profile)
        self._compactor = CompactionMemo(config=config, store=store, profile=self.profile)
        self._arrival = ArrivalForms(config=config, store=store, profile=self.profile)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse:
        stop = configured_stop()
        return run_sync(self._steps(request), handler=handler, summary_model=self.summary_model, stop=stop)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Any
    ) -> ModelResponse | ExtendedModelResponse:
        stop = configured_stop()
        return await run_async(
            self._steps(request), handler=handler, summary_model=self.summary_model, stop=stop
        )

    # --- the shared core: measure, plan, carry out ----------------------------------------------

    def _steps(self, request: ModelRequest) -> Steps[ModelResponse | ExtendedModelResponse]:
        state, ledger = thread_ledger(self.ledger, request.state or {}, now=self.now())
        return with_ledger((yield from self._call(request.override(state=state))), ledger)  # type: ignore[arg-type]

    def _call(self, request: ModelRequest) -> Steps[ModelResponse | ExtendedModelResponse]:
        turn = self._measure(request)
        if isinstance(plan(self.config, turn.measure), Pass):
            effective = turn.request if turn.previous is None else with_messages(turn.request, turn.effective)
            if turn.sent is not None:
                effective = with_messages(turn.request, turn.sent)
            try:
                passed: ModelResponse = yield CallModel(effective)
                self._report_arrival(turn, request)
                return passed
            except Exception as exc:
                if not is_context_overflow(exc):
                    raise
                turn = turn.overflowed(turn.measure.request.tokens, exc)
        emitter = Emitter(
            stream_writer(request),
            before_tokens=turn.measure.request.tokens,
            trigger_tokens=self.config.trigger_tokens,
            overhead_tokens=turn.overhead,
            profile=self.profile,
        )
        # ``started`` waits until there is something new to report: the same receipts shown again is
        # not a compression (no event, no record, no card).
        emitter.level = LEVEL_COMPACTION if turn.measure.overflowed_at is None else LEVEL_SUMMARY
        try:
            return (yield from self._compress(turn, emitter))
        except GeneratorExit:  # the driver closed the steps: the user's Stop (``steps.run_sync``)
            emitter.stop()
            raise
        except Exception as exc:
            emitter.fail(exc)
            raise

    def _report_arrival(self, turn: _Turn, request: ModelRequest) -> None:
        """Below ``T`` under a horizon, new large results went out as receipts at once: their files are
        reported like any compaction's (a record, a card); nothing before the newest message changed."""
        arrival = turn.arrival
        if arrival is None or not arrival.written or turn.sent is None:
            return
        emitter = Emitter(
            stream_writer(request),
            before_tokens=turn.measure.request.tokens,
            trigger_tokens=self.config.trigger_tokens,
            overhead_tokens=turn.overhead,
            profile=self.profile,
        )
        emitter.record_files(arrival.saved, arrival.failed)
        emitter.start()
        emitter.sent(level=LEVEL_COMPACTION, after_tokens=turn.measure.request.tokens, messages=turn.sent)

    def _measure(self, request: ModelRequest) -> _Turn:
        state = request.state or {}
        previous = valid_event(state.get(SUMMARY_EVENT_KEY))
        effective = effective_messages(request.messages, previous)
        overhead = request_overhead(request, self.profile)
        cutoff = previous["cutoff_index"] if previous else None
        horizon = read_horizon(state.get(COMPACTION_HORIZON_KEY), cutoff=cutoff, length=len(effective))
        sent, arrival = self._horizon_sent(effective, horizon) if horizon is not None else (None, None)
        sizes = self._sizes(overhead + self._effective_totals.total(sent if sent is not None else effective))
        measure = Measure(request=sizes, factor=self._calibration().factor)
        return _Turn(
            request, effective, previous, overhead, measure, horizon=horizon, sent=sent, arrival=arrival
        )

    def _horizon_sent(
        self, effective: list[BaseMessage], horizon: Horizon
    ) -> tuple[list[BaseMessage], Arrival]:
        """What goes out under ``horizon`` between events: the messages before its count compacted as
        the event fixed them (pinned ones whole), those sent before it as they went, the rest in their
        arrival form."""
        compacted = self._compactor.compact(effective).messages
        since = horizon.arrival_from
        arrival = self._arrival.arrival(effective, since)
        view = horizon_view(compacted, effective, arrival.forms, count=horizon.count, since=since)
        view = restore_pinned(effective, view, horizon.pinned) if horizon.pinned else view
        return (without_index(view) if horizon.lean else view), arrival

    def _low_water(
        self, turn: _Turn, compacted: list[BaseMessage]
    ) -> tuple[list[BaseMessage], Horizon, bool]:
        """A compression event's view and horizon: compacted only as far as the low-water mark needs
        (every answered message when that is not enough); whether files were written for its arrival
        forms. The messages that arrive from this call on are in arrival form."""
        effective, profile, horizon = turn.effective, self.profile, turn.horizon
        limit = seen_until(effective)
        start = min(horizon.count if horizon else 0, limit)
        since = horizon.arrival_from if horizon else limit
        arrival = self._arrival.arrival(effective, since)
        forms = [*effective[start:since], *arrival.forms[max(start, since) - since :]]
        count = low_water_count(
            [estimate_message(m, profile) for m in compacted],
            [estimate_message(m, profile) for m in forms],
            start=start,
            limit=limit,
            base=turn.overhead,
            target=int(self.config.low_water_tokens / turn.measure.factor),
        )
        view = horizon_view(compacted, effective, arrival.forms, count=count, since=since)
        cutoff = turn.previous["cutoff_index"] if turn.previous else None
        return view, Horizon(count, cutoff, since=since), arrival.written

    def _compress(self, turn: _Turn, emitter: Emitter) -> Steps[ModelResponse | ExtendedModelResponse]:
        """Step 1, compaction of a copy (pinned messages stay whole), sent when it fits below ``T`` and
        nothing overflowed yet; step 2, whatever the plan says for the compacted view."""
        pinned = pinned_closure(turn.effective, self._pinned_ids())
        compacted = yield Blocking(partial(self._compactor.compact, turn.effective))
        emitter.record_files([r for r in compacted.saved if r.message_id not in pinned], compacted.failed)
        view, horizon, written = yield Blocking(partial(self._low_water, turn, compacted.messages))
        view = restore_pinned(turn.effective, view, pinned) if pinned else view
        candidates = self._candidates(turn, view)
        turn = replace(turn, measure=replace(turn.measure, compacted=tuple(s for _, s in candidates)))
        decision = plan(self.config, turn.measure)
        if isinstance(decision, Compact) and decision.send is not None:
            candidate, sizes = candidates[decision.send]
            emitter.after_tokens = sizes.tokens
            if compacted.fresh or written:
                emitter.start()
            try:
                response: ModelResponse = yield CallModel(with_messages(turn.request, candidate))
            except Exception as exc:
                if not is_context_overflow(exc):
                    raise
                turn = turn.overflowed(sizes.tokens, exc)
            else:
                if emitter.started:
                    emitter.sent(level=LEVEL_COMPACTION, after_tokens=sizes.tokens, messages=candidate)
                horizon = replace(horizon, pinned=pinned, lean=decision.send > 0)
                return with_update(response, {COMPACTION_HORIZON_KEY: horizon.as_state()}, ())
        emitter.after_tokens = candidates[0][1].tokens
        return (yield from self._fold(turn, view, pinned, emitter, horizon.count))

    def _candidates(self, turn: _Turn, view: list[BaseMessage]) -> list[tuple[list[BaseMessage], Sizes]]:
        """The compacted views that may go out, in order: the view, then the view without its reference
        index (the index yields first: what it lists stays in the history file, and searchable)."""
        total = self._view_totals.total(view)
        candidates = [(view, self._sizes(turn.overhead + total))]
        lean = without_index(view)
        if lean is not view:
            shed = estimate_message(view[0], self.profile) - estimate_message(lean[0], self.profile)
            candidates.append((lean, self._sizes(turn.overhead + total - shed)))
        return candidates

    def _fold(
        self, turn: _Turn, view: list[BaseMessage], pinned: frozenset[str], emitter: Emitter, count: int
    ) -> Steps[ModelResponse | ExtendedModelResponse]:
        """The compacted view does not fit: split it (a bounded tail kept verbatim, clipped after an
        overflow), then summarize, hold back or fall back, as the plan says."""
        emitter.start()
        cap = tail_cap(self.config, turn.measure)
        lead = view_lead(
            turn.request.messages, view, turn.previous["cutoff_index"] if turn.previous else None
        )
        split = fold_split(
            view,
            pinned_ids=pinned,
            keep_messages=self.config.keep_messages,
            max_tail_tokens=cap,
            lead=lead,
            profile=self.profile,
        )
        preserved, replacements = yield from self._clipped(turn, split.tail, cap, emitter)
        now = self.now()
        folding = _Folding(view, split, lead, preserved, replacements, now, count, pinned)
        state = turn.request.state or {}
        ledger = cast("Iterable[Mapping[str, Any]] | None", state.get(SUMMARY_CALLS_KEY))
        refusals = cast("Iterable[Mapping[str, Any]] | None", state.get(SUMMARY_REFUSALS_KEY))
        fold = Fold(split.cutoff, messages_tokens(split.folded, self.profile), ledger, now, refusals)
        match plan(self.config, replace(turn.measure, fold=fold)):
            case Summarize() as summarize:
                return (yield from self._summarize(turn, folding, summarize, emitter))
            case HeldBack(guard=guard):
                held = HeldBackSend(
                    turn.request,
                    [*view[: split.cutoff], *preserved],
                    pinned,
                    turn.previous,
                    turn.overhead,
                    turn.measure.overflowed_at,
                    guard,
                    replacements,
                    self.now(),
                )
                return (yield from send_held_back(held, self._sending(emitter)))
            case Fallback(reason=reason):
                return (yield from self._fall_back(turn, folding, emitter, reason))
        raise AssertionError("a compacted view that does not fit is folded")  # pragma: no cover

    def _clipped(
        self, turn: _Turn, tail: list[BaseMessage], cap: int, emitter: Emitter
    ) -> Steps[tuple[list[BaseMessage], Sequence[BaseMessage]]]:
        """After an overflow the kept tail's own tool results are clipped to ``cap`` (files saved)."""
        if turn.measure.overflowed_at is None:
            return tail, ()
        clip = yield Blocking(
            partial(
                clip_overflow_tail,
                tail,
                max_tokens=cap,
                store=self.store,
                preview_tokens=self.config.tool_result_token_limit,
                profile=self.profile,
            )
        )
        emitter.record_files(clip.saved, clip.failed)
        return clip.messages, clip.replacements

    def _summarize(
        self, turn: _Turn, folding: _Folding, decision: Summarize, emitter: Emitter
    ) -> Steps[ModelResponse | ExtendedModelResponse]:
        """Summarize the head of the compacted view (pinned messages taken out), keep the tail, send."""
        emitter.level = LEVEL_SUMMARY
        state, split, now = turn.request.state or {}, folding.split, folding.now
        spent: list[int] = []  # every summary call made, billed even when it fails
        span = _span(turn, folding, decision)
        try:
            outcome = yield from summarize_span(
                span, config=self.config, store=self.store, profile=self.profile, spent=spent
            )
        except SummaryNotSmaller as exc:
            # A compression never makes the request bigger: the compacted view goes out, the call is billed.
            why = not_smaller_reason(summary_tokens=exc.summary_tokens, folded_tokens=exc.folded_tokens)
            return (
                yield from self._fall_back(turn, folding, emitter, FallbackReason.NOT_SMALLER, spent, why)
            )
        except Exception as exc:
            return (yield from self._fall_back(turn, folding, emitter, exc, spent))
        self.ledger.spent(spent, now=now)
        final = [outcome.event["summary_message"], *split.kept_pinned, *folding.preserved]
        tried = (
            f"{TRIED_COMPACTION}, then a summary of the {len(split.folded)} oldest messages, keeping "
            f"{len(split.kept_pinned) + len(folding.preserved)}"
        )
        out = self._outgoing(turn, final)
        sent = self._summary_sent(out, final, outcome, split)
        try:
            response = yield from send_fitting(out, tried=tried)
        except GeneratorExit:
            # Stop while the request the summary made room for was out: the summary was paid for and
            # is valid (the history section is written), so it is kept for the next turn.
            update = _summary_kept(state, outcome, turn, folding, final)
            if kept := persisted(folding.replacements):
                update["messages"] = kept
            raise StoppedAfterSummary(update=update, event=emitter.sent_event(**sent)) from None
        except Exception as exc:
            # The summary is not applied: its history section is taken back out of the file, so no
            # section exists that nothing names (``search_history`` would find its messages twice).
            yield Blocking(partial(history_unappend, self.store, outcome.file_path, outcome.section))
            emitter.fail(exc, unapplied_summary=True)
            raise
        emitter.sent(**sent)
        update = _summary_kept(state, outcome, turn, folding, final)
        return with_update(response, update, folding.replacements)

    def _summary_sent(
        self, out: Outgoing, final: list[BaseMessage], outcome: SummaryOutcome, split: FoldSplit
    ) -> dict[str, Any]:
        """The fields of the ``sent`` event of a summary's request."""
        return {
            "level": LEVEL_SUMMARY,
            "after_tokens": out.tokens,
            "messages": final,
            "cutoff_index": outcome.event["cutoff_index"],
            "compressed_messages": len(split.folded),
            "pinned_messages": len(split.kept_pinned),
            "file_path": outcome.file_path,
            "summary_usage": outcome.usage,
            "summary_tokens": outcome.summary_tokens,
            "folded_tokens": messages_tokens(split.folded, self.profile),
            "loss_report": outcome.loss_report(),
        }

    def _fall_back(
        self,
        turn: _Turn,
        folding: _Folding,
        emitter: Emitter,
        why_not: FallbackReason | Exception,
        spent: Sequence[int] = (),
        why: dict[str, Any] | None = None,
    ) -> Steps[ModelResponse | ExtendedModelResponse]:
        """No summary is applied: the compacted (and clipped) view goes out if it fits, the summary calls
        made are billed. A failed summary (``why_not`` is its exception) fails closed: no state change
        but the ledger's, no error text in any message; nothing else could be folded or it would not
        have been smaller, and the request goes out flagged so if it is still at or above ``T``."""
        state, now = turn.request.state or {}, folding.now
        out = self._outgoing(turn, folding.fallback)
        if isinstance(why_not, Exception):
            emitter.fail(why_not)
            self.ledger.spent(spent, now=now)
            response = yield from send_fallback(
                out,
                cause=why_not,
                overflowed_at=turn.measure.overflowed_at,
                overflow_limit=turn.overflow_limit,
            )
            return with_update(response, ledger_update(state, spent, now=now), ())
        self.ledger.spent(spent, now=now)
        response = yield from send_fitting(out, tried=TRIED[why_not])
        emitter.sent(level=LEVEL_COMPACTION, after_tokens=out.tokens, messages=out.messages, why=why)
        return with_update(response, ledger_update(state, spent, now=now), folding.replacements)

    def _outgoing(self, turn: _Turn, messages: list[BaseMessage]) -> Outgoing:
        sizes = self._sizes(turn.overhead + messages_tokens(messages, self.profile))
        return Outgoing(turn.request, messages, sizes.raw, sizes.tokens, self.config.context_window)

    def _sending(self, emitter: Emitter) -> Sending:
        return Sending(emitter, self.store, self.profile, self._calibration(), self.config.context_window)

    def _pinned_ids(self) -> Collection[str]:
        return self.pins() if self.pins is not None else configured_pins()

    def _sizes(self, raw: int) -> Sizes:
        """A request of ``raw`` tokens by our estimate: that, and the calibrated figure."""
        return Sizes(raw, self._calibration().corrected(raw))

    def _calibration(self) -> Calibration:
        return self.calibration.current()
