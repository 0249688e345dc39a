"""Dropping the oldest messages from view when the spend guard holds a summary back and the compacted
request would overflow the model's window (issue 14 item 4). No model call: the dropped span goes to
the history file first, and a fixed note (carrying the earlier summary, if any) stands for it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from langchain_core.messages import BaseMessage, HumanMessage

from context_engine.formats import (
    DROPPED_NOTE_AFTER_SUMMARY_TEMPLATE,
    DROPPED_NOTE_TEMPLATE,
    SUMMARY_MARKER_KEY,
    SUMMARY_MARKER_VALUE,
)
from context_engine.summary.cutoff import is_summary_message, pair_safe_index, tail_start_within
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
