"""Which part of a compacted view a summary folds, and what stays verbatim: the kept tail and the pinned
messages (issue 14). Shared by the in-run summary, forced (manual, bulk) compression and the preview,
so the preview shows exactly what applying it would fold. Also the loss-report inputs of a fold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage

from compression.engine.compaction import is_saved, tool_result_text
from compression.engine.cutoff import find_cutoff, is_summary_message
from compression.engine.formats import RECEIPT_PATH_PREFIX
from compression.engine.identifiers import identifiers_of
from compression.engine.pins import pinned_tokens
from compression.engine.tokens import DEFAULT_PROFILE, TokenProfile

_RECEIPT_PATH = re.compile(rf"^{re.escape(RECEIPT_PATH_PREFIX)}(\S+)$", re.M)


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


# --- loss-report inputs ---------------------------------------------------------------------------


def message_text(message: BaseMessage) -> str:
    """The text of a message where identifiers are looked for: content, and tool-call arguments."""
    content = message.content
    text = content if isinstance(content, str) else tool_result_text(content)
    if isinstance(message, AIMessage) and message.tool_calls:
        text += "\n" + json.dumps(
            [c.get("args") for c in message.tool_calls], ensure_ascii=False, default=str
        )
    return text


def fold_identifiers(folded: Iterable[BaseMessage]) -> dict[str, str]:
    """Identifiers of the folded messages, earlier summaries left out (their identifiers were counted
    when they were made; what they still hold is in the new summary's input anyway)."""
    return identifiers_of(message_text(m) for m in folded if not is_summary_message(m))


def receipt_paths(messages: Iterable[BaseMessage]) -> list[str]:
    """The saved-file paths named by the receipts among ``messages``."""
    paths: list[str] = []
    for message in messages:
        if is_saved(message):
            paths.extend(_RECEIPT_PATH.findall(message_text(message)))
    return list(dict.fromkeys(paths))
