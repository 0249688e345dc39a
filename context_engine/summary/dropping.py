"""Dropping the oldest messages from view when the spend guard holds a summary back and the compacted
request would overflow the model's window (issue 14 item 4). No model call: the dropped span goes to
the history file first, and a fixed note (carrying the earlier summary, if any) stands for it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from context_engine.formats import (
    DROPPED_NOTE_AFTER_SUMMARY_TEMPLATE,
    DROPPED_NOTE_TEMPLATE,
    SUMMARY_MARKER_KEY,
    SUMMARY_MARKER_VALUE,
)
from context_engine.state import SESSION_ID_KEY, SummarizationEvent
from context_engine.steps import Blocking, Steps
from context_engine.store import ResultStore
from context_engine.summary.cutoff import is_summary_message, pair_safe_index, tail_start_within
from context_engine.summary.fold_plan import receipt_paths
from context_engine.summary.history import (
    build_summarization_event,
    history_path,
    new_session_id,
    render_history_section,
)
from context_engine.summary.identifiers import LossReport
from context_engine.summary.loss import fold_loss_report, read_saved_texts
from context_engine.tokens.messages import DEFAULT_PROFILE, TokenProfile, estimate_message

NOTE_TOKENS_ALLOWANCE = 80  # the note's own size, besides an earlier summary it carries


def drop_cutoff(
    view: Sequence[BaseMessage],
    *,
    pinned_ids: Collection[str],
    max_tokens: int,
    profile: TokenProfile = DEFAULT_PROFILE,
) -> int:
    """Local cutoff: ``view[:cutoff]`` (less the pinned ones) leaves the view, so that the note, the
    pinned messages and ``view[cutoff:]`` fit ``max_tokens``. Pair-safe; keeps at least the latest
    message; 0 when nothing can be dropped."""
    lead = 1 if view and is_summary_message(view[0]) else 0
    fixed = NOTE_TOKENS_ALLOWANCE + sum(
        estimate_message(m, profile) for i, m in enumerate(view) if i < lead or m.id in pinned_ids
    )
    unpinned = [m for m in view[lead:] if m.id not in pinned_ids]
    start = tail_start_within(unpinned, max_tokens=max(max_tokens - fixed, 0), profile=profile)
    if start >= len(unpinned):
        start = len(unpinned) - 1  # the latest message is always kept, even when it alone is too big
    if start <= 0:
        return 0
    # Back to an index into the view, then off any tool result (keeping less, never a split pair).
    first_kept = unpinned[start]
    cutoff = next(i for i in range(lead, len(view)) if view[i] is first_kept)
    cutoff = pair_safe_index(view, cutoff, prefer_forward=True)
    return cutoff if cutoff > lead else 0


def build_drop_message(*, dropped: int, file_path: str, previous_summary: BaseMessage | None) -> HumanMessage:
    """The note that stands for ``dropped`` messages; marked as a summary so later steps treat it so."""
    note = DROPPED_NOTE_TEMPLATE.format(count=dropped, file_path=file_path)
    if previous_summary is None:
        return HumanMessage(content=note, additional_kwargs={SUMMARY_MARKER_KEY: SUMMARY_MARKER_VALUE})
    text = previous_summary.content if isinstance(previous_summary.content, str) else previous_summary.text
    return HumanMessage(
        content=DROPPED_NOTE_AFTER_SUMMARY_TEMPLATE.format(summary=text, note=note),
        additional_kwargs={SUMMARY_MARKER_KEY: SUMMARY_MARKER_VALUE},
    )


@dataclass(frozen=True)
class DropPlan:
    """What dropping ``view[:cutoff]`` from view writes and sends: the history section to append to
    ``file_path`` first, then ``final`` (the note, the pinned messages it passed over, the rest)."""

    dropped: list[BaseMessage]
    kept_pinned: list[BaseMessage]
    session_id: str
    file_path: str
    section: str
    note: HumanMessage
    event: SummarizationEvent
    final: list[BaseMessage]


def plan_drop(
    view: Sequence[BaseMessage],
    *,
    cutoff: int,
    pinned_ids: Collection[str],
    state: Mapping[str, Any],
    previous: Mapping[str, Any] | None,
    lead: int,
    now: datetime,
) -> DropPlan:
    """The drop of ``view[:cutoff]`` (``drop_cutoff``), pinned messages kept: pure, nothing written."""
    head = view[:cutoff]
    dropped = [m for m in head if m.id not in pinned_ids or is_summary_message(m)]
    kept_pinned = [m for m in head if m.id in pinned_ids and not is_summary_message(m)]
    session_id = session_id_from(state.get(SESSION_ID_KEY))
    file_path = history_path(session_id)
    note = build_drop_message(
        dropped=sum(1 for m in dropped if not is_summary_message(m)),
        file_path=file_path,
        previous_summary=view[0] if is_summary_message(view[0]) else None,
    )
    event = build_summarization_event(
        previous=previous,
        local_cutoff=cutoff,
        summary_message=note,
        file_path=file_path,
        lead=lead,
        pinned_ids=[m.id for m in kept_pinned if m.id],
    )
    return DropPlan(
        dropped=dropped,
        kept_pinned=kept_pinned,
        session_id=session_id,
        file_path=file_path,
        section=render_history_section(dropped, now=now),
        note=note,
        event=event,
        final=[note, *kept_pinned, *view[cutoff:]],
    )


def drop_span(plan: DropPlan, *, store: ResultStore) -> Steps[tuple[DropPlan, LossReport]]:
    """Carry out ``plan`` (``plan_drop``): the dropped span goes to the history file first (a failed write
    stops here, nothing dropped), then the loss report of what left the view. No model call."""
    yield Blocking(partial(store.append_text, plan.file_path, plan.section))
    saved = yield Blocking(partial(read_saved_texts, store, receipt_paths(plan.dropped)))
    loss = fold_loss_report(
        plan.dropped, summary=str(plan.note.content), kept=plan.final[1:], saved_texts=saved
    )
    return plan, loss


def session_id_from(value: Any) -> str:
    """The state's session id when it is a safe one, else a new one."""
    if isinstance(value, str):
        try:
            history_path(value)
        except ValueError:
            pass
        else:
            return value
    return new_session_id()
