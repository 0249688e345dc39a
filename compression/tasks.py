"""Celery tasks for compression: one bulk compression per thread, and the fan-out that sends them;
the manual compression job's task is re-exported from its dispatcher for task discovery."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import partial

from celery import shared_task
from django.db import transaction

from compression.bulk import BulkReport, bulk_compress_one, bulk_compress_selected, celery_broker_configured
from compression.errors import TRANSIENT_MODEL_ERRORS, ModelUnavailable
from compression.services.dispatch import compress_job_task

__all__ = ["bulk_compress_enqueue", "bulk_compress_start", "compress_job_task", "thread_compress_task"]


# The task keeps its registered name (``compression.tasks.thread_compact``) so messages already queued
# under it are still delivered after an upgrade.
@shared_task(
    name="compression.tasks.thread_compact",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(*TRANSIENT_MODEL_ERRORS, ModelUnavailable),
    retry_backoff=True,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=5,
)
def thread_compress_task(self, conversation_id: int, batch: str | None = None) -> dict:
    """Compress one thread. Idempotent: a redelivery with the same batch replays the stored result;
    a thread busy or locked by someone else is reported and left alone (never waited on, never retried).
    """
    outcome = bulk_compress_one(
        conversation_id=conversation_id, batch=batch, raise_transient=True, attempt=self.request.retries
    )
    return {
        "conversation_id": conversation_id,
        "label": outcome.label,
        "tokens_saved": outcome.tokens_saved,
        "error": outcome.error,
    }


def bulk_compress_enqueue(*, conversation_ids: list[int], queue: str | None = None) -> str:
    """One Celery task per thread (sent after commit); returns the batch id that makes them idempotent."""
    batch = uuid.uuid4().hex[:12]
    options = {"queue": queue} if queue else {}
    for conversation_id in conversation_ids:
        transaction.on_commit(
            partial(thread_compress_task.apply_async, args=(conversation_id, batch), **options)
        )
    return batch


@dataclass(frozen=True)
class BulkStart:
    """What ``bulk_compress_start`` did: queued a batch, or compressed the threads now."""

    queued: int = 0
    batch: str | None = None
    report: BulkReport | None = None

    def summary_line(self) -> str:
        if self.report is not None:
            return self.report.summary_line()
        return f"Queued {self.queued} thread(s) for compaction (batch {self.batch})."


def bulk_compress_start(*, conversation_ids: list[int], requested_by=None) -> BulkStart:
    """Compress the threads in the background when a broker is configured (one task per thread),
    else now, one by one (an in-memory broker would only reach this process)."""
    if celery_broker_configured():
        batch = bulk_compress_enqueue(conversation_ids=conversation_ids)
        return BulkStart(queued=len(conversation_ids), batch=batch)
    report, _by_label = bulk_compress_selected(conversation_ids=conversation_ids, requested_by=requested_by)
    return BulkStart(report=report)
