"""``CompressionMiddleware``: automatic context compression around every model call (SPEC 6).

Below ``T`` the request passes through untouched. At or above it: deterministic compaction of a copy,
then, if still too large (or the provider reported an overflow), a strict summary whose result lives
in ``_summarization_event``; the raw ``messages`` are never deleted. Pinned messages are neither
compacted nor folded; every summary carries a loss report; the spend guard may hold a summary back,
and then the request goes out compacted (with the oldest unpinned messages dropped from view only if
it would not fit the model's window).
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
from langgraph.config import get_config

from context_engine import outcomes
from context_engine.compaction.clipping import clip_overflow_tail
from context_engine.config import CompressionConfig
from context_engine.errors import CompressionError
from context_engine.events import LEVEL_COMPACTION, LEVEL_SUMMARY
from context_engine.middleware.emitter import Emitter, stream_writer
from context_engine.middleware.measure import request_overhead
from context_engine.middleware.memo import CompactionMemo, MessageTotals
from context_engine.middleware.responses import with_update
from context_engine.middleware.spend_branch import held_back
from context_engine.policy.overflow import is_context_overflow
from context_engine.state import PINNED_IDS_CONFIG_KEY, SUMMARY_CALLS_KEY, SUMMARY_EVENT_KEY, CompressionState
from context_engine.steps import Blocking, CallModel, Steps, run_async, run_sync
from context_engine.store import ResultStore
from context_engine.summary.call import summarize_span, summary_budget, summary_update, tail_cap
from context_engine.summary.fold_plan import fold_split, messages_tokens, view_lead
from context_engine.summary.history import effective_messages, valid_event
from context_engine.summary.pins import pinned_closure, restore_pinned
from context_engine.summary.spend_guard import guard_check
from context_engine.tokens.calibration import Calibration, CalibrationMemory, CalibrationSource
from context_engine.tokens.messages import TokenProfile, estimate_message, profile_for_model

TRIED_COMPACTION = "saving large tool results to files"


@dataclass(frozen=True)
class _Compacted:
    view: list[BaseMessage]
    overflowed_at: int | None
    response: ModelResponse | None  # set when the compacted view was sent and answered
    pinned: frozenset[str] = frozenset()  # pin closure over the view


# How much of the model's window a request held back by the spend guard may fill before the oldest
# messages are dropped from view (room for the reply and for estimate error).
HELD_BACK_WINDOW_SHARE = 0.9
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
    ) -> None:
        """``pins`` returns the ids of the thread's pinned messages, once per compression (only at or
        above ``T``); without it they are read from the run config (``PINNED_IDS_CONFIG_KEY``)."""
        super().__init__()
        self.pins = pins
        self.config = config
        self.store = store
        self.summary_model = summary_model
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
        return run_sync(self._steps(request), handler=handler, summary_model=self.summary_model)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Any
    ) -> ModelResponse | ExtendedModelResponse:
        return await run_async(self._steps(request), handler=handler, summary_model=self.summary_model)

    # --- the shared core ------------------------------------------------------------------------

    def _steps(self, request: ModelRequest) -> Steps[ModelResponse | ExtendedModelResponse]:
        trigger = self.config.trigger_tokens
        previous = valid_event((request.state or {}).get(SUMMARY_EVENT_KEY))
        effective = effective_messages(request.messages, previous)
        overhead = request_overhead(request, self.profile)
        before = self._calibration().corrected(overhead + self._effective_totals.total(effective))
        overflowed_at: int | None = None
        if before < trigger:
            try:
                return (
                    yield CallModel(request if previous is None else request.override(messages=effective))
                )
            except Exception as exc:
                if not is_context_overflow(exc):
                    raise
                overflowed_at = before
        emitter = Emitter(stream_writer(request), before_tokens=before)
        emitter.start(level=LEVEL_COMPACTION if overflowed_at is None else LEVEL_SUMMARY)
        try:
            return (yield from self._compress(request, effective, previous, overhead, overflowed_at, emitter))
        except Exception as exc:
            emitter.fail(exc)
            raise

    def _compress(
        self,
        request: ModelRequest,
        effective: list[BaseMessage],
        previous: Mapping[str, Any] | None,
        overhead: int,
        overflowed_at: int | None,
        emitter: Emitter,
    ) -> Steps[ModelResponse | ExtendedModelResponse]:
        """Step 1, compaction; step 2, a summary when the compacted view still does not fit."""
        pinned = pinned_closure(effective, self._pinned_ids())
        compacted = yield from self._compact(request, effective, overhead, overflowed_at, emitter, pinned)
        if compacted.response is not None:
            return compacted.response
        return (yield from self._summarize(request, compacted, previous, overhead, emitter))

    def _compact(
        self,
        request: ModelRequest,
        effective: list[BaseMessage],
        overhead: int,
        overflowed_at: int | None,
        emitter: Emitter,
        pinned: frozenset[str],
    ) -> Steps[_Compacted]:
        """Compact a copy (pinned messages stay whole) and send it when it fits below ``T`` (and
        nothing overflowed yet)."""
        compacted = yield Blocking(partial(self._compactor.compact, effective))
        emitter.record_files([r for r in compacted.saved if r.message_id not in pinned], compacted.failed)
        view = restore_pinned(effective, compacted.messages, pinned) if pinned else compacted.messages
        emitter.after_tokens = after = self._calibration().corrected(overhead + self._view_totals.total(view))
        if overflowed_at is None and after < self.config.trigger_tokens:
            try:
                response = yield CallModel(request.override(messages=view))
            except Exception as exc:
                if not is_context_overflow(exc):
                    raise
                overflowed_at = after
            else:
                emitter.complete(
                    level=LEVEL_COMPACTION,
                    after_tokens=after,
                    **self.ended(LEVEL_COMPACTION, after, view, overhead),
                )
                return _Compacted(view, overflowed_at, response, pinned)
        return _Compacted(view, overflowed_at, None, pinned)

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
        # The kept tail stays within half the budget: half of T, or of what the provider just rejected.
        kept_cap = self._raw(tail_cap(config, overflowed_at=overflowed_at))  # in our estimate's units
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

        if cutoff <= 0:  # nothing to summarize: the compacted (and clipped) view is all we can do
            response = yield from self._send_compressed(
                request,
                preserved,
                overhead,
                tried=f"{TRIED_COMPACTION}; there was no older history to summarize",
            )
            after = self.estimate(overhead, preserved)
            # Nothing could be folded: if the request is still at or above T, it goes out flagged so.
            emitter.complete(
                level=LEVEL_COMPACTION,
                after_tokens=after,
                **self.ended(LEVEL_COMPACTION, after, preserved, overhead),
            )
            return with_update(response, {}, replacements)

        state = request.state or {}
        now = self.now()
        budget = self._raw(summary_budget(config, overflowed_at=overflowed_at))
        decision = guard_check(
            state.get(SUMMARY_CALLS_KEY),
            limits=config.spend,
            now=now,
            input_tokens=min(messages_tokens(split.folded, self.profile), budget),
        )
        if not decision.allowed:
            held = [*view[:cutoff], *preserved]
            return (
                yield from held_back(
                    self,
                    request,
                    held,
                    pinned=compacted.pinned,
                    overflowed_at=overflowed_at,
                    previous=previous,
                    overhead=overhead,
                    emitter=emitter,
                    decision=decision,
                    replacements=replacements,
                )
            )

        emitter.level = LEVEL_SUMMARY
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
            )
        except Exception as exc:
            # Fail closed: no state change, no error text in any message.
            emitter.fail(exc)
            fallback = [*view[:cutoff], *preserved]
            return (yield from self._fallback(request, fallback, overhead, overflowed_at, exc))

        event = outcome.event
        final = [event["summary_message"], *split.kept_pinned, *preserved]
        tried = (
            f"{TRIED_COMPACTION}, then a summary of the {len(split.folded)} oldest messages, keeping "
            f"{len(split.kept_pinned) + len(preserved)}"
        )
        response = yield from self._send_compressed(request, final, overhead, tried=tried)
        after = self.estimate(overhead, final)
        emitter.complete(
            level=LEVEL_SUMMARY,
            after_tokens=after,
            **self.ended(LEVEL_SUMMARY, after, final, overhead),
            cutoff_index=event["cutoff_index"],
            compressed_messages=len(split.folded),
            pinned_messages=len(split.kept_pinned),
            file_path=outcome.file_path,
            summary_usage=outcome.usage,
            summary_tokens=outcome.summary_tokens,
            loss_report=outcome.loss_report(),
        )
        return with_update(response, summary_update(state, outcome, previous, now=now), replacements)

    def _pinned_ids(self) -> Collection[str]:
        if self.pins is not None:
            return self.pins()
        try:
            configurable = get_config().get("configurable") or {}
        except RuntimeError:  # outside a graph run
            return ()
        pinned = configurable.get(PINNED_IDS_CONFIG_KEY)
        return pinned if isinstance(pinned, list | tuple | set | frozenset) else ()

    def window_limit(self, overflowed_at: int | None) -> int | None:
        """Tokens a request may take before the provider would reject it (with room for the reply)."""
        window = self.config.context_window
        limits = [int(window * HELD_BACK_WINDOW_SHARE)] if window else []
        if overflowed_at is not None:
            limits.append(int(overflowed_at * HELD_BACK_WINDOW_SHARE))
        return min(limits) if limits else None

    def _send_compressed(
        self, request: ModelRequest, messages: list[BaseMessage], overhead: int, *, tried: str
    ) -> Steps[ModelResponse]:
        """Send the compressed request. A provider that still finds it too long fails the turn with the
        platform's own account (how far over, what was tried), never the provider's raw error."""
        try:
            return (yield CallModel(request.override(messages=messages)))
        except Exception as exc:
            if not is_context_overflow(exc):
                raise
            tokens = self.estimate(overhead, messages)
            raise CompressionError(still_too_long(tokens, self.config.context_window, tried=tried)) from exc

    def _fallback(
        self,
        request: ModelRequest,
        view: list[BaseMessage],
        overhead: int,
        overflowed_at: int | None,
        cause: Exception,
    ) -> Steps[ModelResponse]:
        """After a failed summary: go on with the compacted view if it can fit, else a clear error."""
        tokens = self.estimate(overhead, view)
        window = self.config.context_window
        fits = (window is None or tokens < window) and (overflowed_at is None or tokens < overflowed_at)
        if not fits:
            raise CompressionError(_too_large(cause, tokens, window)) from cause
        try:
            return (yield CallModel(request.override(messages=view)))
        except Exception as exc:
            if is_context_overflow(exc):
                raise CompressionError(_too_large(cause, tokens, window)) from exc
            raise

    def ended(self, folded: str, after: int, sent: Sequence[BaseMessage], overhead: int) -> dict[str, Any]:
        """The event's ``outcome`` and, when the request still reached the trigger, its ``reason_detail``."""
        outcome, reason = outcomes.ended(
            folded=folded,
            after_tokens=after,
            sent=sent,
            overhead_tokens=overhead,
            trigger_tokens=self.config.trigger_tokens,
            profile=self.profile,
        )
        return {"outcome": outcome, "reason_detail": reason}

    def estimate(self, overhead: int, messages: Sequence[BaseMessage]) -> int:
        raw = overhead + sum(estimate_message(m, self.profile) for m in messages)
        return self._calibration().corrected(raw)

    def _calibration(self) -> Calibration:
        return self.calibration.current()

    def _raw(self, tokens: int) -> int:
        """A budget in the model's tokens, in our uncorrected estimate's units."""
        return int(tokens / self._calibration().factor)


def _too_large(cause: Exception, tokens: int, window: int | None) -> str:
    limit = f"the model's context window ({window} tokens)" if window else "the model's context window"
    return (
        f"Context compression failed ({type(cause).__name__}) and the conversation "
        f"(about {tokens} tokens) does not fit {limit}."
    )


def still_too_long(tokens: int, window: int | None, *, tried: str) -> str:
    """The run's error when even the compressed request overflows: plain words, the platform's figures."""
    if window and tokens > window:
        size = f"about {tokens:,} tokens, {tokens - window:,} over the model's context window of {window:,}"
    elif window:
        size = (
            f"about {tokens:,} tokens by the platform's estimate, which the model's server counted as over "
            f"its context window of {window:,}"
        )
    else:
        size = f"about {tokens:,} tokens, which the model's server counted as over its context window"
    return (
        f"This conversation is too long for the model even after compression ({size}). Tried: {tried}. "
        "Start a new thread, or send less at once."
    )
