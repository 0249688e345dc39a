"""Compression jobs from outside their worker: read, wait for, stop, reclaim from a lost worker, and
the body the API, the page and the socket show."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from agent_platform.errors import ApplicationError
from agent_platform.workdir import workdir_for
from compression.errors import (
    CapabilityMissing,
    JobCancelled,
    JobFailed,
    JobFinished,
    JobNotFound,
    ModelUnavailable,
    StorageFull,
    SummaryFailed,
    ThreadChanged,
    WorkerLost,
)
from compression.models import CompressionJob
from compression.services.records import record_accounted, record_summary_failure
from context_engine.errors import StoreError
from context_engine.summary.history import history_unappend
from conversations import events
from conversations.selectors import thread_get, thread_get_owned
from conversations.services.leases import MAX_ATTEMPTS, holder_lost
from conversations.services.pressure import thread_compressing_clear

logger = logging.getLogger(__name__)

WAIT_POLL_SECONDS = 0.05
_ERRORS: dict[str, type[ApplicationError]] = {
    error.code: error
    for error in (SummaryFailed, StorageFull, ThreadChanged, JobCancelled, WorkerLost, CapabilityMissing)
}


def compress_job_cancel(*, thread_id: uuid.UUID | str, job_id: int, user: AbstractBaseUser) -> CompressionJob:
    """Stop the caller's job at any point before its apply: ``cancelled``, nothing applied (a summary
    call in flight is abandoned). Stopping a cancelled job again returns it; a finished one is 409
    ``job_finished``."""
    conversation = thread_get_owned(thread_id=thread_id, user=user)
    job = CompressionJob.objects.filter(pk=job_id, conversation=conversation).first()
    if job is None:
        raise JobNotFound()
    now = timezone.now()
    stopped = CompressionJob.objects.filter(pk=job.pk, status__in=CompressionJob.ACTIVE_STATUSES).update(
        status=CompressionJob.Status.CANCELLED,
        cancel_requested_at=now,
        finished_at=now,
        error_code=JobCancelled.code,
        error=str(JobCancelled.default_message),
    )
    job.refresh_from_db()
    if not stopped:
        if job.status != CompressionJob.Status.CANCELLED:
            raise JobFinished()
        return job
    thread_compressing_clear(thread_id=conversation.thread_id)
    job_announce(job, conversation.thread_id)
    return job


def compress_job_get(*, thread_id: uuid.UUID | str, job_id: int, user: AbstractBaseUser) -> CompressionJob:
    """A job of a thread the caller may see (the owner, or staff who may view conversations)."""
    conversation = thread_get(thread_id=thread_id, user=user)
    job = (
        CompressionJob.objects.filter(pk=job_id, conversation=conversation)
        .select_related("conversation")
        .first()
    )
    if job is None:
        raise JobNotFound()
    return job


def compress_job_wait(*, job_id: int, timeout: float) -> CompressionJob:
    """The job once it has ended, or as it is after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        job = job_get(job_id)
        if job.finished or time.monotonic() >= deadline:
            return job
        time.sleep(WAIT_POLL_SECONDS)


def compress_job_raise(job: CompressionJob) -> None:
    """Raise the error a failed or cancelled job ended with (the synchronous answer's status); the
    exception as the job met it rides along as ``error_detail`` (for an operator's report, never a page)."""
    if job.status == CompressionJob.Status.CANCELLED:
        raise JobCancelled()
    if job.status != CompressionJob.Status.FAILED:
        return
    if job.retryable:
        error: ApplicationError = ModelUnavailable(job.error or None)
    else:
        error = _ERRORS.get(job.error_code, JobFailed)(job.error or None, code=job.error_code or None)
    error.error_detail = job.error_detail
    raise error


PENDING_HISTORY_KEY = "pending_history"


def history_pending_set(held: Any, manual: Any) -> None:
    """Note on the job the history section its summary appended, before the apply: a job that dies
    or fails before applying has it taken back (``history_orphan_remove``), so no orphan stays."""
    if manual.history_section and manual.file_path:
        section = {"file_path": manual.file_path, "section": manual.history_section}
        held().update(result={PENDING_HISTORY_KEY: section})


def history_orphan_remove(job_id: int) -> bool:
    """Take back the history section a job appended and never applied; whether one was taken back.
    Only while the file still ends with it (nothing appended since)."""
    result = CompressionJob.objects.filter(pk=job_id).values_list("result", flat=True).first() or {}
    pending = result.get(PENDING_HISTORY_KEY) if isinstance(result, dict) else None
    if not pending:
        return False
    job = CompressionJob.objects.select_related("conversation").get(pk=job_id)
    try:
        removed = history_unappend(workdir_for(job.conversation), pending["file_path"], pending["section"])
    except StoreError:
        logger.warning("Could not take back the history section of job %s", job_id, exc_info=True)
        return False
    CompressionJob.objects.filter(pk=job_id).update(result={})
    return removed


def compress_job_reclaim(*, job: CompressionJob) -> str | None:
    """Take a job back from its lost worker: re-queued if it was claimed once, failed after that (never
    half-applied: the apply is one transaction). ``None`` when it was no longer held as read."""
    held = CompressionJob.objects.filter(
        pk=job.pk, status=CompressionJob.Status.RUNNING, worker=job.worker, heartbeat_at=job.heartbeat_at
    )
    if not held.exists():
        return None
    history_orphan_remove(job.pk)  # its lost worker's unapplied section, before anyone appends again
    if job.attempts >= MAX_ATTEMPTS:
        if not _fail_lost(job, held):
            return None
        outcome = CompressionJob.Status.FAILED
    else:
        if not held.update(
            status=CompressionJob.Status.QUEUED, worker="", heartbeat_at=None, started_at=None
        ):
            return None
        outcome = CompressionJob.Status.QUEUED
    thread_compressing_clear(thread_id=job.conversation.thread_id)
    job_announce(job_get(job.pk), job.conversation.thread_id)
    return outcome


def _fail_lost(job: CompressionJob, held: Any) -> bool:
    """Fail a job whose worker was lost twice, with its audit record (a failed compression, as any
    other: the audit counts it). False when it was no longer held as read."""
    error = WorkerLost()
    with transaction.atomic():
        record = record_summary_failure(
            conversation_id=job.conversation_id,
            trigger=job.trigger,
            requested_by=job.requested_by,
            error=error.message,
            error_detail=f"{error.code}: the job's worker stopped twice ({job.worker})",
            started_at=job.started_at or job.created_at,
            account=False,
        )
        failed = held.update(
            status=CompressionJob.Status.FAILED,
            error_code=error.code,
            error=error.message,
            record=record,
            finished_at=timezone.now(),
        )
        if not failed:
            transaction.set_rollback(True)  # taken meanwhile: no record of a failure that did not happen
            return False
    record_accounted(record)
    return True


def job_orphaned(job: CompressionJob, *, now: datetime | None = None) -> bool:
    """Whether a ``running`` job lost its worker (the run leases' rule)."""
    worker = job.worker.rsplit(":", 1)[0]  # host:pid:tag, the lease machinery reads host:pid
    return holder_lost(heartbeat_at=job.heartbeat_at, started_at=job.started_at, worker=worker, now=now)


def job_get(job_id: int) -> CompressionJob | None:
    """The job with what its body and its worker read, or None."""
    return (
        CompressionJob.objects.select_related("conversation__agent", "requested_by", "record")
        .filter(pk=job_id)
        .first()
    )


def compress_job_body(job: CompressionJob) -> dict[str, Any]:
    """The job as the API, the page and the socket show it."""
    return {
        "id": job.pk,
        "thread_id": str(job.conversation.thread_id),
        "status": job.status,
        "trigger": job.trigger,
        "attempts": job.attempts,
        "preview_id": job.preview_id or None,
        "error": {"code": job.error_code, "message": job.error} if job.error_code else None,
        # A running job's result holds only its pending history section (bookkeeping, not a result).
        "result": (job.result or None) if PENDING_HISTORY_KEY not in (job.result or {}) else None,
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


def job_announce(job: CompressionJob, thread_id: object) -> None:
    """Tell the thread's pages the job's status (on commit when inside a transaction)."""
    events.broadcast(thread_id, events.COMPRESSION_JOB, job=compress_job_body(job))
