"""The thread page's compression panels as a template tag: the compression card and the memory panel,
read from the records and the checkpoint values the page already loaded (so their figures agree with
the meter beside them), and compression words (levels, outcomes, triggers, reasons) as filters."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.translation import gettext as _

from compression import panels
from compression.selectors import compression_job_latest, compression_latest, summary_failure_streak
from context_engine.state import SUMMARY_EVENTS_KEY
from conversations.branch_selectors import branch_numbers
from conversations.selectors import thread_folded_last_seq, thread_kept_pinned_seqs

register = template.Library()


@register.inclusion_tag("compression/_compression_panels.html", takes_context=True)
def compression_panels(context: template.Context) -> dict[str, Any]:
    """The card and the memory panel of ``conversation``, from the page's ``values`` (checkpoint),
    ``state`` (busy flags) and ``token_usage``; ``can_act`` shows the owner's controls."""
    conversation, values = context["conversation"], context.get("values") or {}
    state, token_usage = context.get("state") or {}, context.get("token_usage") or {}
    can_undo = bool(values.get(SUMMARY_EVENTS_KEY))
    card = panels.compression_card(
        compression_latest(conversation=conversation),
        compressing=bool(state.get("compressing")),
        can_undo=can_undo,
        job=compression_job_latest(conversation=conversation),
        failures=panels.failure_streak_from(summary_failure_streak(conversation=conversation)),
    )
    # The panel counts and names messages by the numbers the page shows (1..n along the branch).
    folded_last = thread_folded_last_seq(conversation=conversation, values=values)
    pinned = thread_kept_pinned_seqs(conversation=conversation, values=values)
    numbers = branch_numbers(
        conversation=conversation, seqs=[*pinned, *([folded_last] if folded_last else [])]
    )
    memory = panels.memory_from(
        values,
        summary_tokens=token_usage.get("summary_message_tokens"),
        folded_last_seq=numbers.get(folded_last, folded_last) if folded_last else None,
        pinned_seqs=tuple(numbers.get(seq, seq) for seq in pinned),
        pinned_anchors=tuple(pinned),
    )
    return {
        **context.flatten(),
        "compression": card,
        "memory": memory,
        # Undo lasts as long as the summary: offered beside it once a later compression took the card.
        "undo_in_memory": can_undo and memory.active and not (card is not None and card.undoable),
    }


@register.inclusion_tag("compression/_auto_hint.html", takes_context=True)
def auto_compression_hint(context: template.Context) -> dict[str, Any]:
    """The hint at or above the trigger: it promises an automatic compression only while one can work
    (not while the summary model keeps failing, nor when the latest could fold nothing more)."""
    conversation = context["conversation"]
    failures = panels.failure_streak_from(summary_failure_streak(conversation=conversation))
    latest = compression_latest(conversation=conversation)
    return {
        "pressure": context.get("pressure"),
        "can_act": context.get("can_act"),
        "failures": failures,
        "latest": latest,
        "standing": panels.hint_standing(failures=failures, latest=latest),
    }


@register.filter
def level_label(level: Any) -> str:
    """A compression level in the reader's language."""
    labels = {
        "compaction": _("compaction"),
        "summary": _("summary"),
        "undo": _("undo"),
    }
    return str(labels.get(str(level or ""), level or _("summary")))


@register.filter
def outcome_label(outcome: Any) -> str:
    return panels.outcome_label(outcome)


@register.filter
def trigger_label(trigger: Any) -> str:
    """Who started a compression, in the reader's language."""
    labels = {
        "auto": _("automatic, during a run"),
        "manual": _("requested on the page or the API"),
        "bulk": _("bulk compaction"),
        "undo": _("undo"),
    }
    return str(labels.get(str(trigger or ""), trigger or ""))


@register.filter
def reason_words(reason: Any) -> str:
    return panels.reason_text(reason)
