"""Receivers of other apps' hooks, connected in ``CompressionConfig.ready()``."""

from __future__ import annotations

from typing import Any

from agent_platform.calibration.services import calibration_record
from compression.models import CompressionJob, CompressionRecord
from compression.selectors import compression_record_fields
from compression.services.dispatch import compress_jobs_recover
from compression.services.records import compression_record_from_event
from conversations.models import AgentRun, Conversation


def record_run_compression(sender: Any, *, run: AgentRun, event: dict[str, Any], **kwargs: Any) -> None:
    """The audit record of an automatic compression a run just reported."""
    compression_record_from_event(run=run, event=event)


def record_usage_reading(sender: Any, *, run: AgentRun, estimated: int, reported: int, **kwargs: Any) -> None:
    """A reported prompt-token count, against our estimate of the same request: the calibration of the
    run's endpoint and model (the agent carries both)."""
    calibration_record(agent=run.conversation.agent, estimated=estimated, reported=reported)


def thread_held_by_job(sender: Any, *, conversation: Conversation, **kwargs: Any) -> bool:
    """The busy rule's question: a queued or running compression job holds this thread."""
    return CompressionJob.objects.filter(
        conversation_id=conversation.pk, status__in=CompressionJob.ACTIVE_STATUSES
    ).exists()


def recover_jobs(sender: Any, **kwargs: Any) -> None:
    """Each recovery pass: jobs whose worker died are retried once, then failed."""
    compress_jobs_recover()


def export_records(sender: Any, *, conversation: Conversation, **kwargs: Any) -> list[dict[str, Any]]:
    """A thread export's compression records, oldest first, as the thread's readers may see them."""
    rows = CompressionRecord.objects.filter(conversation_id=conversation.pk).order_by("created_at", "id")
    return [
        {"created_at": record.created_at.isoformat(), **compression_record_fields(record)} for record in rows
    ]
