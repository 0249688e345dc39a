"""The preview of a forced compression (issue 14 item 2): what a summary would fold, what stays, the
estimated size after and the identifiers at risk. No model call and nothing written: compaction goes
to a staged store that is never flushed. The preview is named by a fingerprint of everything the fold
depends on, so applying it can tell whether the thread changed since.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

from context_engine.config import CompressionConfig
from context_engine.formats import SUMMARY_MESSAGE_TEMPLATE
from context_engine.manual.summary_size import SummarySize, summary_size
from context_engine.policy.trigger import tail_cap
from context_engine.state import PINNED_IDS_KEY, SUMMARY_EVENT_KEY
from context_engine.store import StagedStore
from context_engine.summary.fold_plan import (
    FoldPlan,
    fold_identifiers,
    message_text,
    plan_fold,
    receipt_paths,
)
from context_engine.summary.history import without_index
from context_engine.summary.identifiers import LossReport
from context_engine.summary.indexing import preview_index_tokens
from context_engine.summary.loss import fold_loss_report, read_saved_texts
from context_engine.tokens.calibration import NEUTRAL, Calibration
from context_engine.tokens.messages import TokenProfile, estimate_text, messages_tokens

PREVIEW_ID_CHARS = 32
# The reference index is built as if the summary kept none of the folded identifiers; the summary keeps
# some (the index then lists fewer), and its budget moves with the summary's size. Applied indexes were
# 0.56-1.13 times the one the preview built (5th percentile to max, ``make bench`` section 6): the range.
INDEX_RANGE_SHARES = (0.5, 1.15)


@dataclass(frozen=True)
class FoldPreview:
    preview_id: str
    foldable: bool
    before_tokens: int
    estimated_after_tokens: int
    summary_estimate_tokens: int = 0  # the summary alone; the reference index is in the size after
    index_tokens: int = 0  # the reference index that will follow the summary (built, not estimated)
    estimated_after_range: tuple[int, int] = (0, 0)  # the estimate's likely range (``summary_size``)
    estimate_unsure: bool = False  # the range is too wide for one number: the page shows the range
    estimate_exact: bool = False  # computed with the agent's local summarizer (``manual.exact_size``)
    folded_ids: tuple[str, ...] = ()
    folded_tokens: int = 0
    tail_ids: tuple[str, ...] = ()
    tail_tokens: int = 0
    pinned_ids: tuple[str, ...] = ()
    pinned_tokens: int = 0
    identifiers_total: int = 0
    identifiers_at_risk: int = 0
    at_risk: tuple[str, ...] = ()
    identifiers_in_saved_files: int = 0  # one read away: in a saved file the view names
    extra: dict[str, Any] = field(default_factory=dict)


def forced_plan(
    values: Mapping[str, Any],
    *,
    config: CompressionConfig,
    store: StagedStore,
    profile: TokenProfile,
    pinned_ids: Collection[str] = (),
    calibration: Calibration = NEUTRAL,
) -> FoldPlan:
    """The fold a forced compression makes of ``values`` now, the one its preview shows and its apply
    carries out: compaction goes to the staged ``store``; the kept tail's cap is in our estimate's units
    (the provider's budget divided by ``calibration``)."""
    return plan_fold(
        values,
        config=config,
        store=store,
        profile=profile,
        pinned_ids=pinned_ids,
        max_tail_tokens=int(tail_cap(config) / calibration.factor),
    )


def summary_estimate(
    plan: FoldPlan,
    *,
    folded_tokens: int,
    hint: int | None = None,
    history: Sequence[tuple[int, int]] = (),
) -> SummarySize:
    """The new summary message's tokens (``manual.summary_size``): fitted on the agent's ``history`` of
    ``(folded_tokens, summary_tokens)``; without enough of it, the thread's current summary, ``hint``
    (the agent's recent mean), or a share of what is folded."""
    frame = estimate_text(
        SUMMARY_MESSAGE_TEMPLATE.format(file_path="outputs/conversation_history/x.md", summary=""),
        plan.profile,
    )
    current = (  # the thread's summary without its index (sized apart, ``preview_index_tokens``)
        messages_tokens(without_index([plan.previous["summary_message"]]), plan.profile)
        if plan.previous
        else None
    )
    return summary_size(
        folded_tokens=folded_tokens, history=history, current=current, hint=hint, frame_tokens=frame
    )


def fold_preview(
    plan: FoldPlan,
    *,
    preview_id: str,
    summary_hint: int | None = None,
    summary_history: Sequence[tuple[int, int]] = (),
    overhead_tokens: int = 0,
    calibration: Calibration = NEUTRAL,
    before_tokens: int | None = None,
) -> FoldPreview:
    """The preview of ``plan``; ``summary_hint``: see ``summary_estimate``. The before/after sizes are
    whole requests on the meter's basis (``overhead_tokens`` added, corrected by ``calibration``), as
    applying it reports them (``before_tokens``, when given: the meter's figure now); the parts (folded,
    tail, pinned) are the messages' own estimates."""
    if before_tokens is None:
        before_tokens = calibration.corrected(overhead_tokens + plan.before_tokens)
    before = before_tokens
    split = plan.split
    if not plan.foldable:
        return FoldPreview(preview_id, False, before, before)
    cutoff = split.cutoff
    raw_tail = plan.effective[cutoff:]
    raw_pinned = [m for m in plan.effective[:cutoff] if m.id in plan.pinned_ids]
    folded_tokens = messages_tokens(split.folded, plan.profile)
    tail_tokens = messages_tokens(raw_tail, plan.profile)
    pinned_tokens = messages_tokens(raw_pinned, plan.profile)
    size = summary_estimate(plan, folded_tokens=folded_tokens, hint=summary_hint, history=summary_history)
    # The reference index that will follow the summary is deterministic: sized here, not estimated.
    index = preview_index_tokens(plan, summary_tokens=size.tokens, folded_tokens=folded_tokens)
    estimate = size.tokens + index
    index_low, index_high = (round(index * share) for share in INDEX_RANGE_SHARES)
    report = _at_risk(plan, kept=[*raw_pinned, *raw_tail])
    return FoldPreview(
        preview_id=preview_id,
        foldable=True,
        before_tokens=before,
        estimated_after_tokens=calibration.corrected(
            overhead_tokens + estimate + pinned_tokens + tail_tokens
        ),
        summary_estimate_tokens=size.tokens,  # the summary alone, as fitted (the index is sized apart)
        index_tokens=index,
        estimated_after_range=(
            calibration.corrected(overhead_tokens + size.low + index_low + pinned_tokens + tail_tokens),
            calibration.corrected(overhead_tokens + size.high + index_high + pinned_tokens + tail_tokens),
        ),
        # One number when the summary's size is known well (its fit held on the agent's own summaries);
        # the range still carries the index's spread.
        estimate_unsure=size.unsure,
        folded_ids=_ids(split.folded),
        folded_tokens=folded_tokens,
        tail_ids=_ids(raw_tail),
        tail_tokens=tail_tokens,
        pinned_ids=_ids(raw_pinned),
        pinned_tokens=pinned_tokens,
        identifiers_total=report.total,
        identifiers_at_risk=report.lost,
        at_risk=report.lost_identifiers,
        identifiers_in_saved_files=report.one_read,
    )


def _at_risk(plan: FoldPlan, *, kept: Sequence[BaseMessage]) -> LossReport:
    """The folded identifiers and where they would end up: before the model writes it, the summary
    holds nothing; its message will name the history file."""
    folded = plan.split.folded
    identifiers = fold_identifiers(folded)
    return fold_loss_report(
        folded,
        summary="",
        kept=kept,
        saved_texts=read_saved_texts(plan.store, receipt_paths(folded)) if identifiers else {},
        identifiers=identifiers,
        history_named=True,
    )


def _ids(messages: Sequence[BaseMessage]) -> tuple[str, ...]:
    return tuple(m.id for m in messages if m.id)


def preview_fingerprint(
    values: Mapping[str, Any],
    *,
    config: CompressionConfig,
    pinned_ids: Collection[str],
    transcript_marker: object = None,
) -> str:
    """A name for "this thread as it is now": the state's messages (ids, and content hashes, so a
    message replaced in place counts), the current summary, the pins, the compression settings and a
    marker of the transcript (its latest message). Any change makes an earlier preview stale."""
    digest = hashlib.sha256()
    for message in values.get("messages") or []:
        digest.update(f"{message.id}\x1f{_content_hash(message)}\x1e".encode())
    event = values.get(SUMMARY_EVENT_KEY)
    if isinstance(event, Mapping):
        summary = event.get("summary_message")
        digest.update(
            json.dumps(
                [
                    event.get("cutoff_index"),
                    _content_hash(summary) if isinstance(summary, BaseMessage) else None,
                    event.get(PINNED_IDS_KEY),
                ],
                default=str,
            ).encode()
        )
    settings = [
        config.trigger_tokens,
        config.keep_messages,
        hashlib.sha256(config.summary_prompt.encode()).hexdigest(),
        config.tool_result_token_limit,
        config.tool_arg_max_length,
        config.context_window,
        config.model_name,
        config.pinned_cap,
        config.index_percent,
    ]
    digest.update(json.dumps([settings, sorted(pinned_ids), transcript_marker], default=str).encode())
    return digest.hexdigest()[:PREVIEW_ID_CHARS]


def _content_hash(message: BaseMessage) -> str:
    return hashlib.sha256(message_text(message).encode("utf-8", "surrogatepass")).hexdigest()[:16]
