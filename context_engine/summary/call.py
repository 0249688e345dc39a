"""The summary step shared by automatic (in-run) and manual compression: append the span to the
history file, ask the model for a strict summary, and build the ``_summarization_event`` update."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage

from context_engine.compaction.media import offload_media
from context_engine.config import CompressionConfig
from context_engine.errors import Stopped, StoreError, SummaryError, SummaryNotSmaller
from context_engine.formats import REFUSED_REPAIR_TEMPLATE
from context_engine.state import (
    REPAIR_USAGE_KEY,
    SESSION_ID_KEY,
    SUMMARY_CALLS_KEY,
    SUMMARY_EVENT_KEY,
    SUMMARY_EVENTS_KEY,
    SUMMARY_REFUSALS_KEY,
    SUMMARY_USAGE_KEY,
    TOKEN_USAGE_KEY,
    SummarizationEvent,
    push_summary_event,
)
from context_engine.steps import Blocking, Steps, Summarize
from context_engine.store import ResultStore
from context_engine.summary.breaker import record_refusal
from context_engine.summary.dropping import session_id_from
from context_engine.summary.extractive import extractive_budget, extractive_summary, message_entries
from context_engine.summary.faithfulness import (
    CODE_BREAKER_OPEN,
    CODE_NOT_A_SUMMARY,
    SUMMARY_EXTRACTIVE,
    SUMMARY_MODEL,
    Refusal,
    SummarySource,
    content_refusal,
)
from context_engine.summary.fold_plan import fold_identifiers, receipt_paths
from context_engine.summary.history import (
    build_summarization_event,
    build_summary_message,
    format_summary_prompt,
    history_next_line,
    history_path,
    render_history_section,
    summary_text,
)
from context_engine.summary.identifiers import LossReport, better_summary
from context_engine.summary.indexing import IndexInputs, index_inputs
from context_engine.summary.loss import fold_loss_report, read_saved_texts, repair_prompt, view_text
from context_engine.summary.reference_index import NO_INDEX, ReferenceIndex
from context_engine.summary.spend_guard import record_call
from context_engine.summary.validation import DEFAULT_RULE, SummaryRule, summary_rule
from context_engine.tokens.messages import (
    TokenProfile,
    estimate_message,
    estimate_text,
    messages_tokens,
    with_estimate,
)
from context_engine.tokens.usage import add_usage


@dataclass(frozen=True)
class SummaryOutcome:
    event: SummarizationEvent
    session_id: str
    file_path: str
    usage: dict[str, Any] | None
    loss: LossReport = field(default_factory=LossReport)
    calls: tuple[int, ...] = ()  # input tokens (estimated) of each summary call made: 1, or 2 with a repair
    repaired: bool = False  # the repair pass's summary was kept
    summary_tokens: int = 0  # the summary message's estimate without its index (what a preview goes by)
    index: ReferenceIndex = NO_INDEX  # the reference index that follows the summary (in its message)
    refusal: Refusal | None = None  # why the model's summary was refused: this one is extractive
    breaker: dict[str, Any] = field(default_factory=dict)  # the circuit breaker's state update
    section: str = ""  # the history section appended for it (taken back out if it is not applied)

    @property
    def kind(self) -> str:
        return SUMMARY_EXTRACTIVE if self.refusal is not None else SUMMARY_MODEL

    def loss_report(self) -> dict[str, Any]:
        """The loss report as the event and the audit record carry it, with the summary's kind and, for an
        extractive one, why the model's was refused (the identifiers it invented among it)."""
        return {
            **self.loss.as_dict(),
            "repair_calls": max(len(self.calls) - 1, 0),
            "repaired": self.repaired,
            "indexed": len(self.index.entries),  # of those in view, the ones the reference index lists
            "summary_kind": self.kind,
            "refusal": self.refusal.as_dict() if self.refusal is not None else None,
            "invented": len(self.refusal.invented) if self.refusal is not None else 0,
        }


def summary_shrinks(*, summary_tokens: int, folded_tokens: int) -> bool:
    """A compression never makes the request bigger: a summary is applied only when its message is
    smaller than the messages it folds (the pinned messages it keeps are in the request either way)."""
    return summary_tokens < folded_tokens


@dataclass(frozen=True)
class Span:
    """What one summary folds: ``folded`` (the messages it stands for), at ``local_cutoff`` of the view
    (``lead`` see ``global_cutoff``); ``kept`` stays verbatim after it (pinned messages and the tail),
    ``pinned`` those of them from before the cutoff, recorded in the event. ``budget``: the summary
    call's input tokens. ``fold_limit``: when the caller's request holds the folded messages in a
    smaller form, the size a summary must be smaller than."""

    folded: Sequence[BaseMessage]
    state: Mapping[str, Any]
    previous: Mapping[str, Any] | None
    local_cutoff: int
    budget: int
    now: datetime
    kept: Sequence[BaseMessage] = ()
    pinned: Sequence[BaseMessage] = ()
    lead: int = 1
    fold_limit: int | None = None
    paused_until: datetime | None = None  # the breaker's pause: the extractive summary, no model call


@dataclass(frozen=True)
class _Draft:
    """Everything a candidate summary is measured against, fixed before the first call."""

    folded: Sequence[BaseMessage]
    kept: Sequence[BaseMessage]
    file_path: str
    section: str  # the folded messages' history section, appended once the summary is valid
    folded_tokens: int
    identifiers: dict[str, str]
    saved: dict[str, str]
    inputs: IndexInputs
    index_budget: int
    profile: TokenProfile
    source: SummarySource
    trigger_tokens: int

    def refusal(self, reply: BaseMessage, rule: SummaryRule, prompt: str) -> tuple[str, Refusal | None]:
        """The reply's summary text and why it may not become memory (None: it may): its shape
        (``validation``), then its content (``faithfulness``)."""
        try:
            text = summary_text(reply, rule)
        except SummaryError as exc:
            return "", Refusal(CODE_NOT_A_SUMMARY, str(exc)[:300])
        return text, content_refusal(text, prompt=prompt, required=rule.required, source=self.source)

    def extractive(self) -> str:
        """The folded messages' extractive summary, within the summary budget."""
        budget = extractive_budget(folded_tokens=self.folded_tokens, trigger_tokens=self.trigger_tokens)
        return extractive_summary(message_entries(self.folded), budget_tokens=budget, profile=self.profile)

    def size(self, candidate: str, index: str = "") -> int:
        message = build_summary_message(candidate, file_path=self.file_path, index=index)
        return estimate_message(message, self.profile)

    def shrinks(self, candidate: str, index: str = "") -> bool:
        return summary_shrinks(summary_tokens=self.size(candidate, index), folded_tokens=self.folded_tokens)

    def indexed(self, candidate: str) -> ReferenceIndex:
        """The candidate's reference index within the agent's budget and within the room the summary
        leaves below what it folds (the index never makes a compression grow the request)."""
        budget = min(self.index_budget, self.folded_tokens - 1 - self.size(candidate))
        while budget > 0:
            index = self.inputs.build(summary=candidate, budget=budget, profile=self.profile)
            if self.shrinks(candidate, index.text):
                return index
            budget = min(budget - 1, budget * 3 // 4)
        return NO_INDEX

    def judged(self, candidate: str) -> tuple[ReferenceIndex, LossReport]:
        """The candidate's index and loss report (its message names the history file)."""
        index = self.indexed(candidate)
        loss = fold_loss_report(
            self.folded,
            summary=candidate,
            kept=self.kept,
            saved_texts=self.saved,
            identifiers=self.identifiers,
            history_named=True,
            index=index,
        )
        return index, loss


def summarize_span(
    span: Span,
    *,
    config: CompressionConfig,
    store: ResultStore,
    profile: TokenProfile,
    spent: list[int] | None = None,
) -> Steps[SummaryOutcome]:
    """Inline media saved first (neither the history file nor the summary model ever receives base64),
    then the summary, then its history section (required), then the summary's loss report and (when the
    agent allows it and identifiers were lost) one repair call.

    A model summary that is refused (``Draft.refusal``), even after the repair pass, is replaced by the
    folded messages' extractive summary, labelled so (``SummaryOutcome.refusal``); so is every summary
    while the breaker pauses the model (``span.paused_until``). A thread never goes without a summary for
    want of a model's. A failed call still raises before state changes.

    The section is written only once the summary exists, so a failed or interrupted summary leaves no
    history file or section behind; a caller that then does not apply it takes ``outcome.section`` back
    out (``history_unappend``). ``spent`` receives the input tokens of each summary call as it is made,
    so a caller can enter a failed one in the spend guard's ledger too (a provider bills it). A summary
    whose message is not smaller than what it folds raises ``SummaryNotSmaller``, before any write."""
    media = yield Blocking(partial(offload_media, span.folded, store=store))
    if media.failed:
        raise StoreError(f"Could not save inline media before summarizing: {media.failed[0].error}")
    folded = media.messages
    session_id = session_id_from(span.state.get(SESSION_ID_KEY))
    draft = yield from _draft(
        span, folded, file_path=history_path(session_id), config=config, store=store, profile=profile
    )
    calls = spent if spent is not None else []
    asked = yield from _ask(span, draft, config=config, calls=calls)
    text = asked.text if asked.refusal is None else draft.extractive()
    if not draft.shrinks(text):
        # Before the history section is written: a summary that is not applied leaves nothing behind.
        raise SummaryNotSmaller(summary_tokens=draft.size(text), folded_tokens=draft.folded_tokens)
    yield Blocking(partial(store.append_text, draft.file_path, draft.section))
    judged = (text, *draft.judged(text))
    usage, repaired = asked.usage, False
    if asked.refusal is None and config.repair_pass and judged[2].lost:
        second = repair_prompt(asked.prompt, judged[2].lost_identifiers)
        calls.append(estimate_text(second, profile))
        retry, retry_usage = yield from _repair(second, asked.rule, draft)
        if retry_usage:  # kept apart too: what the repair pass costs stays visible
            usage = add_usage(usage, {**retry_usage, REPAIR_USAGE_KEY: retry_usage})
        if retry is not None and better_summary(judged[2], retry[2]):
            judged, repaired = retry, True
    outcome = _outcome(
        span, draft, judged, session_id=session_id, usage=usage, calls=calls, repaired=repaired
    )
    breaker = _breaker_update(span, asked.refusal, config=config)
    return replace(outcome, refusal=asked.refusal, breaker=breaker, section=draft.section)


@dataclass(frozen=True)
class _Asked:
    """The model's answer: its summary text and usage, or why it was refused (then ``text`` is empty)."""

    text: str = ""
    usage: dict[str, Any] | None = None
    refusal: Refusal | None = None
    prompt: str = ""
    rule: SummaryRule = DEFAULT_RULE


def _ask(span: Span, draft: _Draft, *, config: CompressionConfig, calls: list[int]) -> Steps[_Asked]:
    """The model's summary of the fold, with one more try after a refusal when the agent allows a repair
    pass; a refusal when both are refused, or without a call while the breaker pauses the model."""
    if span.paused_until is not None:
        why = f"model summaries are paused until {span.paused_until.isoformat()} after repeated refusals"
        return _Asked(refusal=Refusal(CODE_BREAKER_OPEN, why))
    profile = draft.profile
    prompt = format_summary_prompt(
        draft.folded, prompt=config.summary_prompt, max_tokens=span.budget, profile=profile
    )
    rule = summary_rule(
        prompt=config.summary_prompt,
        required=config.summary_required,
        folded_chars=sum(len(message.text) for message in draft.folded),
    )
    calls.append(estimate_text(prompt, profile))
    reply = yield Summarize(prompt)
    usage = _usage(reply)
    text, refusal = draft.refusal(reply, rule, config.summary_prompt)
    if refusal is not None and config.repair_pass:
        second = REFUSED_REPAIR_TEMPLATE.format(prompt=prompt, reason=refusal.reason)
        calls.append(estimate_text(second, profile))
        try:
            retry = yield Summarize(second)
        except Stopped:
            raise
        except Exception:  # noqa: BLE001 - a failed second try leaves the first refusal standing
            return _Asked(usage=usage, refusal=refusal, prompt=prompt, rule=rule)
        retry_usage = _usage(retry)
        if retry_usage:
            usage = add_usage(usage, {**retry_usage, REPAIR_USAGE_KEY: retry_usage})
        retried, again = draft.refusal(retry, rule, config.summary_prompt)
        if again is None:
            return _Asked(retried, usage, None, prompt, rule)
    return _Asked(text, usage, refusal, prompt, rule)


def _breaker_update(span: Span, refusal: Refusal | None, *, config: CompressionConfig) -> dict[str, Any]:
    """The breaker's state after this summary: cleared by an accepted model summary, one refusal more
    after a refused one, as it was while paused."""
    if refusal is None:
        return {SUMMARY_REFUSALS_KEY: []} if span.state.get(SUMMARY_REFUSALS_KEY) else {}
    if refusal.code == CODE_BREAKER_OPEN:
        return {}
    history = span.state.get(SUMMARY_REFUSALS_KEY)
    refusals = record_refusal(history, code=refusal.code, limits=config.breaker, now=span.now)
    return {SUMMARY_REFUSALS_KEY: refusals}


def _outcome(
    span: Span,
    draft: _Draft,
    judged: tuple[str, ReferenceIndex, LossReport],
    *,
    session_id: str,
    usage: dict[str, Any] | None,
    calls: Sequence[int],
    repaired: bool,
) -> SummaryOutcome:
    text, index, loss = judged
    event = build_summarization_event(
        previous=span.previous,
        local_cutoff=span.local_cutoff,
        summary_message=with_estimate(
            build_summary_message(text, file_path=draft.file_path, index=index.text), draft.profile
        ),
        file_path=draft.file_path,
        lead=span.lead,
        pinned_ids=[m.id for m in span.pinned if m.id],
        reference_index=index,
    )
    return SummaryOutcome(
        event=event,
        session_id=session_id,
        file_path=draft.file_path,
        usage=usage,
        loss=loss,
        calls=tuple(calls),
        repaired=repaired,
        summary_tokens=draft.size(text),  # without the index: the preview sizes that itself
        index=index,
    )


def _draft(
    span: Span,
    folded: Sequence[BaseMessage],
    *,
    file_path: str,
    config: CompressionConfig,
    store: ResultStore,
    profile: TokenProfile,
) -> Steps[_Draft]:
    """What the summary is measured against: the folded size, identifiers, the saved files the folded
    receipts name, and the reference index's inputs (its section starts on the line after what the
    append-only history file holds now)."""
    folded_tokens = messages_tokens(folded, profile)
    if span.fold_limit is not None:
        folded_tokens = min(folded_tokens, span.fold_limit)
    section = render_history_section(folded, now=span.now)
    first_line = yield Blocking(partial(history_next_line, store, file_path))
    saved_paths = receipt_paths(folded)
    saved = (yield Blocking(partial(read_saved_texts, store, saved_paths))) if saved_paths else {}
    inputs = index_inputs(
        folded,
        kept=span.kept,
        saved=saved,
        section=section,
        file_path=file_path,
        first_line=first_line,
        previous=span.previous,
    )
    return _Draft(
        folded=folded,
        kept=span.kept,
        file_path=file_path,
        section=section,
        folded_tokens=folded_tokens,
        identifiers=fold_identifiers(folded),
        saved=saved,
        inputs=inputs,
        index_budget=config.index_budget,
        profile=profile,
        # What a summary may draw on: the section holds the folded messages (an earlier summary among
        # them) with the receipts' and tool calls' text; the saved files they name; the history file.
        # The kept messages too: naming what stays in view is no invention.
        source=SummarySource([section, *saved.values(), file_path, *(view_text(m) for m in span.kept)]),
        trigger_tokens=config.trigger_tokens,
    )


def _repair(
    prompt: str, rule: SummaryRule, draft: _Draft
) -> Steps[tuple[tuple[str, ReferenceIndex, LossReport] | None, dict[str, Any] | None]]:
    """One repair call: its candidate (text, index, loss report) when it is a summary that still shrinks
    the request, and its usage. A failed call or a reply that is no summary keeps the first one."""
    try:
        retry = yield Summarize(prompt)
    except Exception:
        return None, None
    try:
        text = summary_text(retry, rule)
    except SummaryError:
        text = ""
    if not text or not draft.shrinks(text):
        return None, _usage(retry)
    index, loss = draft.judged(text)
    return (text, index, loss), _usage(retry)


def _usage(reply: Any) -> dict[str, Any] | None:
    usage = getattr(reply, "usage_metadata", None)
    return dict(usage) if usage else None


def summary_update(
    state: Mapping[str, Any], outcome: SummaryOutcome, previous: Mapping[str, Any] | None, *, now: datetime
) -> dict[str, Any]:
    """The state update that makes ``outcome`` the model-visible history (undo history kept bounded),
    with the summary calls entered in the spend guard's ledger."""
    return {
        SUMMARY_EVENT_KEY: outcome.event,
        SESSION_ID_KEY: outcome.session_id,
        SUMMARY_EVENTS_KEY: push_summary_event(state.get(SUMMARY_EVENTS_KEY), previous),  # type: ignore[arg-type]
        **ledger_update(state, outcome.calls, now=now),
        **outcome.breaker,
        TOKEN_USAGE_KEY: {
            SUMMARY_USAGE_KEY: add_usage(
                (state.get(TOKEN_USAGE_KEY) or {}).get(SUMMARY_USAGE_KEY),
                {**(outcome.usage or {}), "calls": len(outcome.calls) or int(outcome.refusal is None)},
            )
        },
    }


def ledger_update(state: Mapping[str, Any], calls: Sequence[int], *, now: datetime) -> dict[str, Any]:
    """The spend guard's ledger with ``calls`` (the input tokens of each summary call made, failed ones
    included) entered; nothing when no call was made."""
    ledger = state.get(SUMMARY_CALLS_KEY)
    for tokens in calls:
        ledger = record_call(ledger, now=now, input_tokens=tokens)
    return {SUMMARY_CALLS_KEY: ledger} if calls else {}


def drop_update(
    state: Mapping[str, Any],
    *,
    event: SummarizationEvent,
    session_id: str,
    previous: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The state update of a drop (the spend guard held a summary back and the view did not fit):
    like a summary's, with no summary call to count."""
    return {
        SUMMARY_EVENT_KEY: event,
        SESSION_ID_KEY: session_id,
        SUMMARY_EVENTS_KEY: push_summary_event(state.get(SUMMARY_EVENTS_KEY), previous),  # type: ignore[arg-type]
    }
