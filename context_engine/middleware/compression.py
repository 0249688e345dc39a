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

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage

from context_engine.compaction.clipping import clip_overflow_tail
from context_engine.config import CompressionConfig
from context_engine.errors import SummaryNotSmaller
from context_engine.events import LEVEL_COMPACTION, LEVEL_SUMMARY
from context_engine.middleware.emitter import Emitter, stream_writer
from context_engine.middleware.held_back import send_held_back
from context_engine.middleware.measure import request_overhead
from context_engine.middleware.memo import CompactionMemo, MessageTotals
from context_engine.middleware.responses import send_fallback, send_fitting, with_ledger, with_update
from context_engine.middleware.run_config import configured_pins, configured_stop
from context_engine.outcomes import not_smaller_reason
from context_engine.policy import trigger as policy
from context_engine.policy.overflow import is_context_overflow, provider_limit
from context_engine.state import SUMMARY_CALLS_KEY, SUMMARY_EVENT_KEY, CompressionState
from context_engine.steps import Blocking, CallModel, Steps, run_async, run_sync
from context_engine.store import ResultStore
from context_engine.summary.call import ledger_update, summarize_span, summary_update
from context_engine.summary.fold_plan import fold_split, view_lead
from context_engine.summary.history import effective_messages, valid_event, without_index
from context_engine.summary.pins import pinned_closure, restore_pinned
from context_engine.summary.spend_guard import LedgerSource, OwnState, guard_check, thread_ledger
from context_engine.tokens.calibration import Calibration, CalibrationMemory, CalibrationSource
from context_engine.tokens.messages import TokenProfile, estimate_message, messages_tokens, profile_for_model

TRIED_COMPACTION = "saving large tool results to files"


@dataclass(frozen=True)
class _Compacted:
    view: list[BaseMessage]
    overflowed_at: int | None
    response: ModelResponse | None  # set when the compacted view was sent and answered
    pinned: frozenset[str] = frozenset()  # pin closure over the view
    overflow_limit: int | None = None  # the limit the provider stated when it rejected a request


_utcnow = partial(datetime.now, UTC)


class CompressionMiddleware(AgentMiddleware[CompressionState]):
    state_schema = CompressionState

    def __init__(
        self,
        *,
        config: CompressionConfig,
        store: ResultStore,
        summary_model: BaseChatModel,
        profile: TokenProfile | None = None,
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
        self.profile = profile or profile_for_model(config.model_name)
        # The model's correction of our estimate, learned from reported usage by TokenUsageMiddleware
        # (the same source): every size compared with T or a budget here is a corrected one.
        self.calibration = calibration if calibration is not None else CalibrationMemory()
        self.now = now
        self._effective_totals = MessageTotals(self.profile)
        self._view_totals = MessageTotals(self.profile)
        self._compactor = CompactionMemo(config=config, store=store, profile=self.profile)

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

    # --- the shared core ------------------------------------------------------------------------

    def _steps(self, request: ModelRequest) -> Steps[ModelResponse | ExtendedModelResponse]:
        state, ledger = thread_ledger(self.ledger, request.state or {}, now=self.now())
        return with_ledger((yield from self._call(request.override(state=state))), ledger)  # type: ignore[arg-type]

    def _call(self, request: ModelRequest) -> Steps[ModelResponse | ExtendedModelResponse]:
        trigger = self.config.trigger_tokens
        previous = valid_event((request.state or {}).get(SUMMARY_EVENT_KEY))
        effective = effective_messages(request.messages, previous)
        overhead = request_overhead(request, self.profile)
        raw = overhead + self._effective_totals.total(effective)
        before = self._calibration().corrected(raw)
        overflowed_at: int | None = None
        overflow_limit: int | None = None
        if not policy.needs_compression(
            before, trigger=trigger, raw=raw, context_window=self.config.context_window
        ):
            try:
                return (
                    yield CallModel(request if previous is None else request.override(messages=effective))
                )
            except Exception as exc:
                if not is_context_overflow(exc):
                    raise
                overflowed_at, overflow_limit = before, provider_limit(exc)
        emitter = Emitter(
            stream_writer(request),
            before_tokens=before,
            trigger_tokens=trigger,
            overhead_tokens=overhead,
            profile=self.profile,
        )
        # ``started`` waits until there is something new to report: the same receipts shown again is
        # not a compression (no event, no record, no card).
        emitter.level = LEVEL_COMPACTION if overflowed_at is None else LEVEL_SUMMARY
        try:
            return (
                yield from self._compress(
                    request, effective, previous, overhead, (overflowed_at, overflow_limit), emitter
                )
            )
        except GeneratorExit:  # the driver closed the steps: the user's Stop (``steps.run_sync``)
            emitter.stop()
            raise
        except Exception as exc:
            emitter.fail(exc)
            raise

    def _compress(
        self,
        request: ModelRequest,
        effective: list[BaseMessage],
        previous: Mapping[str, Any] | None,
        overhead: int,
        overflow: tuple[int | None, int | None],
        emitter: Emitter,
    ) -> Steps[ModelResponse | ExtendedModelResponse]:
        """Step 1, compaction; step 2, a summary when the compacted view still does not fit.
        ``overflow``: the size the provider rejected, and the limit it stated (or ``None``s)."""
        pinned = pinned_closure(effective, self._pinned_ids())
        compacted = yield from self._compact(request, effective, overhead, overflow, emitter, pinned)
        if compacted.response is not None:
            return compacted.response
        return (yield from self._summarize(request, compacted, previous, overhead, emitter))

    def _compact(
        self,
        request: ModelRequest,
        effective: list[BaseMessage],
        overhead: int,
        overflow: tuple[int | None, int | None],
        emitter: Emitter,
        pinned: frozenset[str],
    ) -> Steps[_Compacted]:
        """Compact a copy (pinned messages stay whole); send it when it fits below ``T`` (nothing overflowed yet)."""
        overflowed_at, overflow_limit = overflow
        compacted = yield Blocking(partial(self._compactor.compact, effective))
        emitter.record_files([r for r in compacted.saved if r.message_id not in pinned], compacted.failed)
        view = restore_pinned(effective, compacted.messages, pinned) if pinned else compacted.messages
        total = self._view_totals.total(view)
        lean = without_index(view)
        # The reference index yields first: when the view fits below T without it, it goes out so,
        # with no summary call (what the index lists stays in the history file, and searchable).
        candidates = [(view, total)]
        if lean is not view:
            shed = estimate_message(view[0], self.profile) - estimate_message(lean[0], self.profile)
            candidates.append((lean, total - shed))
        for candidate, tokens in candidates:
            raw, after = overhead + tokens, self._calibration().corrected(overhead + tokens)
            if not policy.compaction_suffices(
                after,
                trigger=self.config.trigger_tokens,
                overflowed=overflowed_at is not None,
                raw=raw,
                context_window=self.config.context_window,
            ):
                continue
            emitter.after_tokens = after
            if compacted.fresh or overflowed_at is not None:
                emitter.start()
            try:
                response = yield CallModel(request.override(messages=candidate))
            except Exception as exc:
                if not is_context_overflow(exc):
                    raise
                overflowed_at, overflow_limit = after, provider_limit(exc)
                break
            if emitter.started:
                emitter.sent(level=LEVEL_COMPACTION, after_tokens=after, messages=candidate)
            return _Compacted(candidate, overflowed_at, response, pinned)
        emitter.after_tokens = self._calibration().corrected(overhead + total)
        return _Compacted(view, overflowed_at, None, pinned, overflow_limit)

    def _summarize(
        self,
        request: ModelRequest,
        compacted: _Compacted,
        previous: Mapping[str, Any] | None,
        overhead: int,
        emitter: Emitter,
    ) -> Steps[ModelResponse | ExtendedModelResponse]:
        """Summarize the head of the compacted view (pinned messages taken out), keep a bounded tail
        verbatim, then send; or, when the spend guard holds the summary back, send without one."""
        config, view, overflowed_at = self.config, compacted.view, compacted.overflowed_at
        emitter.start()
        # The kept tail stays within half the budget: half of T, or of what the provider just rejected.
        # In our estimate's units: the tail is cut to T (calibration may move it), not to the window.
        kept_cap = int(policy.tail_cap(config, overflowed_at=overflowed_at) / self._calibration().factor)
        lead = view_lead(request.messages, view, previous["cutoff_index"] if previous else None)
        split = fold_split(
            view,
            pinned_ids=compacted.pinned,
            keep_messages=config.keep_messages,
            max_tail_tokens=kept_cap,
            lead=lead,
            profile=self.profile,
        )
        cutoff, preserved = split.cutoff, split.tail
        replacements: Sequence[BaseMessage] = ()
        if overflowed_at is not None:
            clip = yield Blocking(
                partial(
                    clip_overflow_tail,
                    preserved,
                    max_tokens=kept_cap,
                    store=self.store,
                    preview_tokens=config.tool_result_token_limit,
                    profile=self.profile,
                )
            )
            emitter.record_files(clip.saved, clip.failed)
            preserved, replacements = clip.messages, clip.replacements

        state = request.state or {}
        now = self.now()
        # The summary call's input is cut to the window: in both measures, whatever the calibration.
        budget = policy.raw_within(
            policy.summary_budget(config, overflowed_at=overflowed_at), factor=self._calibration().factor
        )
        guard = guard_check(
            state.get(SUMMARY_CALLS_KEY),
            limits=config.spend,
            now=now,
            input_tokens=min(messages_tokens(split.folded, self.profile), budget),
        )
        step = policy.summary_step(cutoff=cutoff, guard_allowed=guard.allowed)
        if step is policy.SummaryStep.NOTHING_TO_FOLD:  # the compacted (and clipped) view is all we can do
            raw, after = self._sizes(overhead, preserved)
            response = yield from send_fitting(
                request,
                preserved,
                raw=raw,
                tokens=after,
                context_window=config.context_window,
                tried=f"{TRIED_COMPACTION}; there was no older history to summarize",
            )
            # Nothing could be folded: if the request is still at or above T, it goes out flagged so.
            emitter.sent(level=LEVEL_COMPACTION, after_tokens=after, messages=preserved)
            return with_update(response, {}, replacements)
        if step is policy.SummaryStep.HELD_BACK:
            return (
                yield from send_held_back(
                    request,
                    [*view[:cutoff], *preserved],
                    pinned=compacted.pinned,
                    previous=previous,
                    overhead=overhead,
                    overflowed_at=compacted.overflowed_at,
                    emitter=emitter,
                    guard=guard,
                    replacements=replacements,
                    store=self.store,
                    profile=self.profile,
                    calibration=self._calibration(),
                    context_window=config.context_window,
                    now=self.now(),
                )
            )

        emitter.level = LEVEL_SUMMARY
        spent: list[int] = []  # every summary call made, billed even when it fails
        try:
            outcome = yield from summarize_span(
                split.folded,
                state=state,
                previous=previous,
                local_cutoff=cutoff,
                config=config,
                store=self.store,
                profile=self.profile,
                budget=budget,
                now=now,
                kept=[*split.kept_pinned, *preserved],
                pinned=split.kept_pinned,
                lead=lead,
                spent=spent,
            )
        except SummaryNotSmaller as exc:
            # A compression never makes the request bigger: the compacted view goes out, the call is billed.
            self.ledger.spent(spent, now=now)
            fallback = [*view[:cutoff], *preserved]
            raw, tokens = self._sizes(overhead, fallback)
            tried = f"{TRIED_COMPACTION}; a summary would not have been smaller than what it folds"
            response = yield from send_fitting(
                request, fallback, raw=raw, tokens=tokens, context_window=config.context_window, tried=tried
            )
            why = not_smaller_reason(summary_tokens=exc.summary_tokens, folded_tokens=exc.folded_tokens)
            emitter.sent(level=LEVEL_COMPACTION, after_tokens=tokens, messages=fallback, why=why)
            return with_update(response, ledger_update(state, spent, now=now), replacements)
        except Exception as exc:
            # Fail closed: no state change but the ledger's, no error text in any message.
            emitter.fail(exc)
            self.ledger.spent(spent, now=now)
            fallback = [*view[:cutoff], *preserved]
            raw, tokens = self._sizes(overhead, fallback)
            response = yield from send_fallback(
                request,
                fallback,
                raw=raw,
                tokens=tokens,
                context_window=config.context_window,
                overflowed_at=overflowed_at,
                cause=exc,
                overflow_limit=compacted.overflow_limit,
            )
            return with_update(response, ledger_update(state, spent, now=now), ())
        self.ledger.spent(spent, now=now)

        event = outcome.event
        final = [event["summary_message"], *split.kept_pinned, *preserved]
        tried = (
            f"{TRIED_COMPACTION}, then a summary of the {len(split.folded)} oldest messages, keeping "
            f"{len(split.kept_pinned) + len(preserved)}"
        )
        raw, after = self._sizes(overhead, final)
        try:
            response = yield from send_fitting(
                request, final, raw=raw, tokens=after, context_window=config.context_window, tried=tried
            )
        except Exception as exc:
            # The summary is valid but not applied: its history section is named by the failed event
            # (and so by the failed record); no section exists that nothing names.
            emitter.fail(exc, file_path=outcome.file_path, unapplied_summary=True)
            raise
        emitter.sent(
            level=LEVEL_SUMMARY,
            after_tokens=after,
            messages=final,
            cutoff_index=event["cutoff_index"],
            compressed_messages=len(split.folded),
            pinned_messages=len(split.kept_pinned),
            file_path=outcome.file_path,
            summary_usage=outcome.usage,
            summary_tokens=outcome.summary_tokens,
            folded_tokens=messages_tokens(split.folded, self.profile),
            loss_report=outcome.loss_report(),
        )
        return with_update(response, summary_update(state, outcome, previous, now=now), replacements)

    def _pinned_ids(self) -> Collection[str]:
        return self.pins() if self.pins is not None else configured_pins()

    def _sizes(self, overhead: int, messages: Sequence[BaseMessage]) -> tuple[int, int]:
        """A request of ``messages``: our raw estimate, and the calibrated one."""
        raw = overhead + messages_tokens(messages, self.profile)
        return raw, self._calibration().corrected(raw)

    def _calibration(self) -> Calibration:
        return self.calibration.current()
