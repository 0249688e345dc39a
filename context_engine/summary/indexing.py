"""What the reference index of one fold is built from, and its size: shared by the summary call (which
builds it for the summary it got) and the preview (which sizes it before any summary exists, as if
the summary kept nothing: no model call, nothing written)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage

from context_engine.formats import SESSION_ID_PREFIX
from context_engine.state import REFERENCE_INDEX_KEY
from context_engine.summary.dropping import session_id_from
from context_engine.summary.fold_plan import FoldPlan, fold_identifiers, message_text, receipt_paths
from context_engine.summary.history import (
    SESSION_ID_DIGITS,
    history_next_line,
    history_path,
    render_history_section,
)
from context_engine.summary.identifiers import identifiers_of
from context_engine.summary.loss import read_saved_texts
from context_engine.summary.reference_index import (
    NO_INDEX,
    Entry,
    ReferenceIndex,
    Source,
    build_reference_index,
    carried_entries,
)
from context_engine.tokens.messages import TokenProfile, estimate_text

INDEX_FRAME_TOKENS = 2  # the separator between the summary and the index, in the summary message


@dataclass(frozen=True)
class IndexInputs:
    identifiers: dict[str, str]  # the folded messages' and their saved results', value -> kind
    kept: list[str]  # what stays verbatim after the summary, as the loss report reads it
    sources: list[Source]  # the history section (first) and the saved results of the folded receipts
    carried: tuple[Entry, ...] = ()  # the earlier summary's index, carried forward where still lacked

    def build(self, *, summary: str, budget: int, profile: TokenProfile) -> ReferenceIndex:
        return build_reference_index(
            self.identifiers,
            summary=summary,
            kept=self.kept,
            sources=self.sources,
            budget=budget,
            estimate=partial(estimate_text, profile=profile),
            carried=self.carried,
        )


def index_inputs(
    folded: Sequence[BaseMessage],
    *,
    kept: Sequence[BaseMessage],
    saved: Mapping[str, str],
    section: str,
    file_path: str,
    first_line: int,
    previous: Mapping[str, Any] | None = None,
) -> IndexInputs:
    """``saved``: the texts of the folded receipts' saved results by path (``read_saved_texts``);
    ``previous``: the earlier summary's event, whose index entries are carried forward."""
    return IndexInputs(
        identifiers={**identifiers_of(saved.values()), **fold_identifiers(folded)},
        kept=[message_text(m) for m in kept],
        sources=[
            Source(file_path, section, first_line, transcript=True),
            *(Source(p, t) for p, t in saved.items()),
        ],
        carried=carried_entries((previous or {}).get(REFERENCE_INDEX_KEY)),
    )


def _safe(session_id: object) -> bool:
    return isinstance(session_id, str) and session_id_from(session_id) == session_id


def stand_in_session_id(messages: Sequence[BaseMessage]) -> str:
    """A thread's first summary names a session id not made yet (``new_session_id``, at apply): one of
    the same shape stands in for a preview, the same for the same thread (reproducible)."""
    digest = hashlib.sha256(str(messages[0].id if messages else "").encode()).digest()
    number = int.from_bytes(digest[:16]) % 10**SESSION_ID_DIGITS
    return f"{SESSION_ID_PREFIX}{number:0{SESSION_ID_DIGITS}d}"


def preview_index_tokens(plan: FoldPlan, *, summary_tokens: int, folded_tokens: int) -> int:
    """The tokens the index adds to the summary message the preview estimates at ``summary_tokens``:
    built as if the summary kept none of the folded identifiers, within the agent's budget and the room
    the summary leaves (as the summary call builds it); 0 when the agent has no index."""
    budget = min(plan.index_budget, folded_tokens - 1 - summary_tokens)
    if budget <= 0 or not plan.foldable:
        return 0
    folded = plan.split.folded
    file_path = history_path(
        plan.session_id if _safe(plan.session_id) else stand_in_session_id(plan.messages)
    )
    inputs = index_inputs(
        folded,
        kept=plan.split.kept,
        saved=read_saved_texts(plan.store, receipt_paths(folded)),
        section=render_history_section(folded, now=datetime.now(UTC)),
        file_path=file_path,
        first_line=history_next_line(plan.store, file_path),
        previous=plan.previous,
    )
    index = inputs.build(summary="", budget=budget, profile=plan.profile)
    return index.tokens + INDEX_FRAME_TOKENS if index is not NO_INDEX else 0
