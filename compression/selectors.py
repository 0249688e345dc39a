"""Reads for compression: bulk candidates (from the indexed pressure figures, never checkpoints) and records."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Exists, F, Min, OuterRef, QuerySet, Subquery
from django.utils import timezone

from compression.models import CompressionJob, CompressionRecord
from context_engine.events import LEVEL_UNDO, STOPPED
from context_engine.policy.pressure import pressure_now
from context_engine.state import TOKEN_USAGE_KEY
from conversations.models import AgentRun, Conversation

if TYPE_CHECKING:
    from agent_platform.models import Agent


def compression_candidates(
    *,
    agent_slug: str | None = None,
    min_pressure: float | None = None,
    idle_for: timedelta | None = None,
    owner: str | None = None,
    limit: int | None = None,
) -> QuerySet[Conversation]:
    """Active threads matching the filters, highest pressure first, annotated with ``has_active_run``
    (a run is running or queued) and ``latest_run_status`` (``interrupted`` means waiting on the user).

    Reads only the ``Conversation`` columns the runs and compressions keep up to date, so selecting
    among many threads never opens a checkpoint.
    """
    runs = AgentRun.objects.filter(conversation=OuterRef("pk"))
    queryset = (
        Conversation.objects.filter(status=Conversation.Status.ACTIVE)
        .select_related("agent", "owner")
        .annotate(
            has_active_run=Exists(runs.filter(status__in=AgentRun.ACTIVE_STATUSES)),
            latest_run_status=Subquery(runs.order_by("-created_at", "-id").values("status")[:1]),
        )
    )
    if agent_slug:
        queryset = queryset.filter(agent__slug=agent_slug)
    if owner:
        queryset = queryset.filter(owner__username=owner)
    if min_pressure is not None:
        queryset = queryset.filter(pressure_ratio__gte=min_pressure)
    if idle_for is not None:
        queryset = queryset.filter(last_activity_at__lte=timezone.now() - idle_for)
    # With a minimum pressure no NULL can match, so a plain descending order suffices, and that is the
    # order PostgreSQL can read backwards from the pressure index (stopping at the limit) instead of
    # sorting every match. Without it, unmeasured threads (NULL) go last.
    pressure = (
        F("pressure_ratio").desc() if min_pressure is not None else F("pressure_ratio").desc(nulls_last=True)
    )
    queryset = queryset.order_by(pressure, "last_activity_at", "pk")
    return queryset[:limit] if limit else queryset


def conversation_is_busy(conversation: Conversation) -> bool:
    """For a ``compression_candidates`` row: would the service answer ``thread_busy`` right now?"""
    return bool(conversation.has_active_run) or conversation.latest_run_status == AgentRun.Status.INTERRUPTED


SUMMARY_HINT_RECORDS = 20
SUMMARY_SIZE_HISTORY = 40


def summary_tokens_hint(*, agent_id: int) -> int | None:
    """The mean size of this agent's recent summary messages (what a first-summary preview goes by)."""
    sizes = [
        size
        for size in CompressionRecord.objects.filter(
            conversation__agent_id=agent_id,
            level=CompressionRecord.Level.SUMMARY,
            result__summary_tokens__gt=0,
        )
        .order_by("-created_at", "-id")
        .values_list("result__summary_tokens", flat=True)[:SUMMARY_HINT_RECORDS]
        if isinstance(size, int)
    ]
    return round(sum(sizes) / len(sizes)) if sizes else None


def summary_size_history(*, agent_id: int) -> list[tuple[int, int]]:
    """This agent's recent summaries as ``(folded_tokens, summary_tokens)``, oldest first: what the
    preview fits the next summary's size on (records from before ``folded_tokens`` was kept are left out)."""
    rows = (
        CompressionRecord.objects.filter(
            conversation__agent_id=agent_id,
            level=CompressionRecord.Level.SUMMARY,
            result__summary_tokens__gt=0,
            result__folded_tokens__gt=0,
        )
        .order_by("-created_at", "-id")
        .values_list("result__folded_tokens", "result__summary_tokens")[:SUMMARY_SIZE_HISTORY]
    )
    return [(f, s) for f, s in reversed(rows) if isinstance(f, int) and isinstance(s, int)]


def meter_tokens(*, agent: Agent, values: Mapping[str, Any]) -> int | None:
    """The next request's size as the thread page's meter shows it now (``pressure_now`` on the agent's
    current configuration; anchored on reported usage when there is some); None before any measurement.
    A manual compression, its preview and an undo report this as their "before", so the card, the
    preview and the meter never disagree on it."""
    figures = pressure_now(
        values.get(TOKEN_USAGE_KEY),
        trigger_tokens=agent.effective_trigger,
        context_window=agent.resolved_context_window,
    )
    return figures.get("next_llm_input_tokens")


def compression_latest(*, conversation: Conversation) -> dict[str, object] | None:
    """The thread's newest compression (automatic, manual, bulk or undo) as the page shows it; an undo
    shows as the ``undo`` level, as its live event does."""
    record = (
        CompressionRecord.objects.filter(conversation=conversation).order_by("-created_at", "-id").first()
    )
    if record is None:
        return None
    return {
        **compression_record_fields(record),
        "level": LEVEL_UNDO if record.trigger == LEVEL_UNDO else record.level,
        "reason": record.reason,
        "reason_detail": record.reason_detail,
        "loss_report": record.loss_report,
        "created_at": record.created_at,
        # An automatic compression the user's Stop ended: "stopped", in words, not a failure.
        "stopped": record.status == CompressionRecord.Status.FAILED and record.reason == STOPPED,
    }


def compression_record_fields(record: CompressionRecord) -> dict[str, Any]:
    """What a compression record tells a thread's readers, wherever they read it (the card, an export)."""
    return {
        "trigger": record.trigger,
        "level": record.level,
        "status": record.status,
        "outcome": record.outcome,
        "before_tokens": record.before_tokens,
        "after_tokens": record.after_tokens,
        "compressed_messages": record.compressed_messages,
        "file_path": record.file_path,
        "saved_files": record.saved_files,
        "error": record.error,
    }


def compression_job_latest(*, conversation: Conversation) -> dict[str, object] | None:
    """The thread's newest compression job (``id``, ``status``, ``created_at``, ``finished_at``): the card
    shows one under way with its progress and Stop (after a reload too), and a stopped one."""
    return (
        CompressionJob.objects.filter(conversation=conversation)
        .order_by("-created_at", "-id")
        .values("id", "status", "created_at", "finished_at")
        .first()
    )


def summary_failure_streak(*, conversation: Conversation) -> dict[str, object] | None:
    """The automatic summaries that failed since the thread's latest applied summary (a Stop is not a
    failure): ``{count, since, kind}`` (``kind``: the latest one's ``failure_kind``), or None."""
    records = CompressionRecord.objects.filter(
        conversation=conversation, level=CompressionRecord.Level.SUMMARY
    )
    applied = (
        records.filter(status=CompressionRecord.Status.COMPLETED)
        .order_by("-created_at")
        .values("created_at")
        .first()
    )
    failed = records.filter(status=CompressionRecord.Status.FAILED, trigger=CompressionRecord.Trigger.AUTO)
    if applied is not None:
        failed = failed.filter(created_at__gt=applied["created_at"])
    failed = failed.exclude(reason=STOPPED)
    found = failed.aggregate(count=Count("id"), since=Min("created_at"))
    if not found["count"]:
        return None
    latest = failed.order_by("-created_at").values_list("reason", flat=True).first()
    return {"count": found["count"], "since": found["since"], "kind": latest or ""}
