"""The preview of a manual compression (issue 14 item 2): what applying it would fold and keep, the
size after and the identifiers at risk. No model call, nothing written, no lock: it only reads. Its
name is a fingerprint of the thread as it is now; applying a preview whose name no longer matches
answers 409 ``stale_preview``."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Max

from agent_platform.calibration.selectors import calibration_for
from agent_platform.runtime.graph import state_repository_for
from agent_platform.runtime.models import local_summarizer_for
from agent_platform.workdir import workdir_for
from compression.errors import CapabilityMissing, StalePreview
from compression.selectors import meter_tokens, summary_size_history, summary_tokens_hint
from context_engine.config import COMPRESSION_CAPABILITY
from context_engine.manual.apply import Reading
from context_engine.manual.exact_size import sized_preview
from context_engine.manual.preview import FoldPreview, fold_preview, forced_plan, preview_fingerprint
from context_engine.policy.pressure import usage_overhead
from context_engine.state import TOKEN_USAGE_KEY
from context_engine.store import StagedStore
from conversations.branch_selectors import branch_numbers
from conversations.models import Conversation
from conversations.selectors import pinned_message_ids, thread_busy_flags, thread_get_owned


def thread_compress_preview(*, thread_id: uuid.UUID | str, user: AbstractBaseUser) -> dict[str, Any]:
    """The caller's own thread (compressing is the owner's alone): what a manual compression would do
    now (the page shows it first)."""
    return conversation_compress_preview(conversation=thread_get_owned(thread_id=thread_id, user=user))


def conversation_compress_preview(*, conversation: Conversation) -> dict[str, Any]:
    """What a compression of ``conversation`` would do now (the page's preview, and the bulk command's
    dry run); no ownership check: callers decide who may see it."""
    agent = conversation.agent
    if not agent.has_capability(COMPRESSION_CAPABILITY):
        raise CapabilityMissing()
    values = state_repository_for(conversation).get_values()
    pinned = pinned_message_ids(conversation=conversation)
    config = agent.compression_config()
    # The same plan and figures as applying it (``compression.services.compress``) would make.
    profile = agent.compression_config().profile
    calibration = calibration_for(agent=agent)
    plan = forced_plan(
        values,
        config=config,
        store=StagedStore(workdir_for(conversation)),  # compaction is staged and never flushed
        profile=profile,
        pinned_ids=pinned,
        calibration=calibration,
    )
    overhead = usage_overhead(values.get(TOKEN_USAGE_KEY), profile)
    preview = fold_preview(
        plan,
        preview_id=preview_name(conversation, values, pinned=pinned),
        summary_hint=summary_tokens_hint(agent_id=agent.pk),
        summary_history=summary_size_history(agent_id=agent.pk),
        overhead_tokens=overhead,
        calibration=calibration,
        before_tokens=meter_tokens(agent=agent, values=values),
    )
    if (sizer := local_summarizer_for(agent)) is not None:
        # A local summarizer (no provider, no cost): the summary is computed, not estimated.
        preview = sized_preview(
            preview,
            values,
            sizer=sizer,
            config=config,
            store=workdir_for(conversation),
            profile=profile,
            reading=Reading(pinned_ids=pinned, calibration=calibration, overhead_tokens=overhead),
        )
    flags = thread_busy_flags(conversation=conversation)
    return _body(conversation, preview, busy=bool(flags["busy"] or flags["interrupted"]))


def preview_name(conversation: Conversation, values: Mapping[str, Any], *, pinned: list[str]) -> str:
    """The fingerprint a preview is named by: state, pins, settings and the transcript's last message."""
    last_seq = conversation.messages.aggregate(last=Max("seq"))["last"]
    return preview_fingerprint(
        values, config=conversation.agent.compression_config(), pinned_ids=pinned, transcript_marker=last_seq
    )


def preview_check(conversation: Conversation, values: Mapping[str, Any], *, preview_id: str) -> None:
    """``StalePreview`` unless the thread is still as it was when ``preview_id`` was shown. The caller
    holds the thread's row lock, so nothing can change between this check and the compression."""
    pinned = pinned_message_ids(conversation=conversation)
    if preview_name(conversation, values, pinned=pinned) != preview_id:
        raise StalePreview()


def _body(conversation: Conversation, preview: FoldPreview, *, busy: bool) -> dict[str, Any]:
    ids = [*preview.folded_ids, *preview.tail_ids, *preview.pinned_ids]
    seqs = dict(conversation.messages.filter(lc_message_id__in=ids).values_list("lc_message_id", "seq"))

    def seq_list(message_ids: tuple[str, ...]) -> list[int]:
        return sorted(seqs[i] for i in message_ids if i in seqs)

    folded, tail = seq_list(preview.folded_ids), seq_list(preview.tail_ids)
    # The page names messages by their numbers on the branch shown (1..n), not by transcript seq.
    numbers = branch_numbers(conversation=conversation, seqs=[*folded[:1], *folded[-1:]])
    return {
        "preview_id": preview.preview_id,
        "status": "ready" if preview.foldable else "no_op",
        "reason": None if preview.foldable else "insufficient_history",
        "busy": busy,
        "before_tokens": preview.before_tokens,
        "estimated_after_tokens": preview.estimated_after_tokens,
        "estimated_after_range": list(preview.estimated_after_range),
        "estimate_unsure": preview.estimate_unsure,
        "estimate_exact": preview.estimate_exact,
        "summary_estimate_tokens": preview.summary_estimate_tokens,
        "folded": {
            "count": len(preview.folded_ids),
            "tokens": preview.folded_tokens,
            "first_seq": folded[0] if folded else None,
            "last_seq": folded[-1] if folded else None,
            "first_number": numbers.get(folded[0]) if folded else None,
            "last_number": numbers.get(folded[-1]) if folded else None,
        },
        "kept_tail": {
            "count": len(preview.tail_ids),
            "tokens": preview.tail_tokens,
            "first_seq": tail[0] if tail else None,
        },
        "pinned": {
            "count": len(preview.pinned_ids),
            "tokens": preview.pinned_tokens,
            "seqs": seq_list(preview.pinned_ids),
        },
        "identifiers": {
            "total": preview.identifiers_total,
            "at_risk": preview.identifiers_at_risk,
            "in_saved_files": preview.identifiers_in_saved_files,
            "at_risk_list": list(preview.at_risk),
        },
    }
