"""Which part of a compacted view a summary folds, and what stays verbatim: the kept tail and the pinned
messages (issue 14). Shared by the in-run summary, forced (manual, bulk) compression and the preview,
so the preview shows exactly what applying it would fold. Also the loss-report inputs of a fold.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from context_engine.compaction.receipts import parse_receipt, receipt_preview
from context_engine.compaction.tool_results import (
    CompactionResult,
    compact_messages,
    is_saved,
    tool_result_text,
)
from context_engine.config import CompressionConfig
from context_engine.state import SESSION_ID_KEY, SUMMARY_EVENT_KEY
from context_engine.store import ResultStore
from context_engine.summary.cutoff import find_cutoff, is_summary_message
from context_engine.summary.history import effective_messages, valid_event
from context_engine.summary.identifiers import identifiers_of
from context_engine.summary.pins import pinned_closure, pinned_tokens, restore_pinned
from context_engine.tokens.messages import DEFAULT_PROFILE, TokenProfile, messages_tokens


@dataclass(frozen=True)
class FoldSplit:
    cutoff: int  # local into the view: view[:cutoff] is folded (less the pinned), 0 = nothing to fold
    folded: list[BaseMessage]  # what the summary stands for (an earlier summary included)
    kept_pinned: list[BaseMessage]  # pinned messages of view[:cutoff], verbatim, in order
    tail: list[BaseMessage]  # view[cutoff:], verbatim

    @property
    def kept(self) -> list[BaseMessage]:
        """What stays verbatim after the summary: pinned messages first, then the tail."""
        return [*self.kept_pinned, *self.tail]


def fold_split(
    view: Sequence[BaseMessage],
    *,
    pinned_ids: Collection[str],
    keep_messages: int,
    max_tail_tokens: int | None,
    lead: int = 0,
    profile: TokenProfile = DEFAULT_PROFILE,
) -> FoldSplit:
    """The pair-safe cutoff of ``view`` with the pinned messages taken out of the folded span.

    Pinned messages count against the tail's token cap (they stay in view too), down to half of it.
    ``lead`` (see ``view_lead``): the earlier summary and the pinned messages it kept are never split,
    the cut falls at or after them. Nothing is folded when the span holds only earlier summaries and
    pinned messages.
    """
    cap = max_tail_tokens
    if cap and pinned_ids:
        cap = max(cap - pinned_tokens(view, pinned_ids, profile), cap // 2)
    cutoff = find_cutoff(view, keep_messages=keep_messages, max_tail_tokens=cap, profile=profile)
    if 0 < cutoff < lead:
        cutoff = lead if lead < len(view) else 0
    head = view[:cutoff]
    folded = [m for m in head if m.id not in pinned_ids or is_summary_message(m)]
    if cutoff <= 0 or all(is_summary_message(m) for m in folded):
        return FoldSplit(0, [], [], list(view))
    kept_pinned = [m for m in head if m.id in pinned_ids and not is_summary_message(m)]
    return FoldSplit(cutoff, folded, kept_pinned, list(view[cutoff:]))


def view_lead(messages: Sequence[BaseMessage], effective: Sequence[BaseMessage], cutoff: int | None) -> int:
    """How many leading entries of ``effective`` stand before ``messages[cutoff:]`` (the summary and the
    pinned messages it keeps); 0 without a summary."""
    if cutoff is None:
        return 0
    return len(effective) - max(len(messages) - cutoff, 0)


@dataclass(frozen=True)
class FoldPlan:
    """A forced fold, planned: the same plan for the preview (which stops here) and for applying it."""

    messages: list[BaseMessage]  # the state's messages
    previous: Mapping[str, Any] | None  # the current ``_summarization_event``
    effective: list[BaseMessage]
    compaction: CompactionResult  # into the store given to ``plan_fold`` (a staged one: nothing written)
    view: list[BaseMessage]  # the compacted effective messages, pinned ones restored
    pinned_ids: frozenset[str]  # pin closure over the view
    lead: int
    split: FoldSplit
    profile: TokenProfile
    store: ResultStore  # where the compaction's receipts point (staged files readable there)
    index_budget: int = 0  # the agent's reference-index budget (``CompressionConfig.index_budget``)
    session_id: Any = None  # the state's summarization session id (names the history file)

    @property
    def before_tokens(self) -> int:
        return messages_tokens(self.effective, self.profile)

    @property
    def foldable(self) -> bool:
        return self.split.cutoff > 0


def plan_fold(
    values: Mapping[str, Any],
    *,
    config: CompressionConfig,
    store: ResultStore,
    profile: TokenProfile,
    pinned_ids: Collection[str] = (),
    max_tail_tokens: int | None,
) -> FoldPlan:
    """Effective messages → compaction (into ``store``) with pinned messages left whole → the split."""
    messages: list[BaseMessage] = list(values.get("messages") or [])
    previous = valid_event(values.get(SUMMARY_EVENT_KEY))
    effective = effective_messages(messages, previous)
    pinned = pinned_closure(effective, pinned_ids)
    compaction = compact_messages(effective, config=config, store=store, profile=profile)
    view = restore_pinned(effective, compaction.messages, pinned)
    lead = view_lead(messages, effective, previous["cutoff_index"] if previous else None)
    split = fold_split(
        view,
        pinned_ids=pinned,
        keep_messages=config.keep_messages,
        max_tail_tokens=max_tail_tokens,
        lead=lead,
        profile=profile,
    )
    return FoldPlan(
        messages,
        previous,
        effective,
        compaction,
        view,
        pinned,
        lead,
        split,
        profile,
        store,
        index_budget=config.index_budget,
        session_id=values.get(SESSION_ID_KEY),
    )


# --- loss-report inputs ---------------------------------------------------------------------------


def message_text(message: BaseMessage) -> str:
    """The text of a message where identifiers are looked for: content, and tool-call arguments. A
    receipt counts for its preview only: its frame (path, hash, sizes) is ours, not the conversation's."""
    content = message.content
    text = content if isinstance(content, str) else tool_result_text(content)
    if is_saved(message):
        return receipt_preview(text)
    return text + tool_call_args_text(message)


def tool_call_args_text(message: BaseMessage) -> str:
    """An AI message's tool-call arguments as identifiers are read in them: one line per call, as the
    history section renders them (the same lines, read once); empty for any other message."""
    if not isinstance(message, AIMessage) or not message.tool_calls:
        return ""
    return "".join(
        "\n" + json.dumps(c.get("args", {}), ensure_ascii=False, default=str) for c in message.tool_calls
    )


def fold_identifiers(folded: Iterable[BaseMessage]) -> dict[str, str]:
    """Identifiers of the folded messages, earlier summaries left out (their identifiers were counted
    when they were made; what they still hold is in the new summary's input anyway)."""
    return identifiers_of(message_text(m) for m in folded if not is_summary_message(m))


def receipt_paths(messages: Iterable[BaseMessage]) -> list[str]:
    """The saved-file paths named by the receipts among ``messages``."""
    paths: list[str] = []
    for message in messages:
        if is_saved(message):
            content = message.content
            receipt = parse_receipt(content if isinstance(content, str) else tool_result_text(content))
            if receipt is not None:
                paths.append(receipt.path)
    return list(dict.fromkeys(paths))
