"""Manual, bulk and admin compression of one thread, carried out now in the caller's thread.

Each goes through a ``CompressionJob`` (``jobs``): the row lock is held to claim the thread and to
apply the result, never while the summary is written. The API and the page submit a job and let it
run where jobs run (``dispatch``); these entry points are for the callers that want the outcome
itself: bulk compaction (a command or a Celery task already), admin actions, scripts and tests.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from compression.models import CompressionJob, CompressionRecord
from compression.services.dispatch import compress_job_start
from compression.services.job_control import compress_job_raise, compress_job_wait
from compression.services.jobs import compress_job_perform, compress_job_submit
from conversations.services.threads import conversation_lock, thread_lock

# How long a caller waits for a job that another worker holds (an idempotent retry of a job in flight).
HELD_ELSEWHERE_WAIT_SECONDS = 600.0


@dataclass(frozen=True)
class CompressionOutcome:
    result: dict[str, Any]
    record: CompressionRecord
    job: CompressionJob


def user_key(user: AbstractBaseUser, key: str | None) -> str | None:
    """A client's keys are its own: another user reusing the same key is a different request."""
    return f"user:{user.pk}:{key}" if key else None


def thread_compress_submit(
    *,
    thread_id: uuid.UUID | str,
    user: AbstractBaseUser,
    idempotency_key: str | None = None,
    preview_id: str | None = None,
) -> CompressionJob:
    """Claim the caller's idle thread for a compression and start it where jobs run (after commit);
    the job (a replayed one when the key was used before: started again only if still queued)."""
    job = compress_job_submit(
        lock=partial(thread_lock, thread_id=thread_id, user=user),
        trigger=CompressionRecord.Trigger.MANUAL,
        requested_by=user,
        idempotency_key=user_key(user, idempotency_key),
        preview_id=preview_id,
    )
    if job.status == CompressionJob.Status.QUEUED:  # a second start of the same job is harmless
        compress_job_start(job_id=job.pk)
    return job


def thread_compress(
    *,
    thread_id: uuid.UUID | str,
    user: AbstractBaseUser,
    idempotency_key: str | None = None,
    preview_id: str | None = None,
) -> CompressionOutcome:
    """Compress the caller's idle thread now. With ``preview_id``, only if the thread is still as that
    preview showed it (else ``StalePreview``, nothing folded)."""
    job = compress_job_submit(
        lock=partial(thread_lock, thread_id=thread_id, user=user),
        trigger=CompressionRecord.Trigger.MANUAL,
        requested_by=user,
        idempotency_key=user_key(user, idempotency_key),
        preview_id=preview_id,
    )
    return compress_job_finish(job)


def conversation_compress(
    *,
    conversation_id: int,
    trigger: str,
    requested_by: AbstractBaseUser | None = None,
    nowait: bool = False,
    idempotency_key: str | None = None,
) -> CompressionOutcome:
    """Compress any thread by id (bulk command, Celery fan-out, admin action); ``nowait`` skips a
    locked thread at once with ``ThreadBusy`` instead of waiting for it."""
    job = compress_job_submit(
        lock=partial(conversation_lock, conversation_id=conversation_id, nowait=nowait),
        trigger=trigger,
        requested_by=requested_by,
        idempotency_key=idempotency_key,
    )
    return compress_job_finish(job)


def compress_job_finish(job: CompressionJob) -> CompressionOutcome:
    """Carry a submitted job to its end here (or wait for the worker that holds it); its outcome, or
    the error it ended with."""
    if job.status == CompressionJob.Status.QUEUED:
        job = compress_job_perform(job_id=job.pk)
    if not job.finished:
        job = compress_job_wait(job_id=job.pk, timeout=HELD_ELSEWHERE_WAIT_SECONDS)
    compress_job_raise(job)
    return CompressionOutcome(job.result, job.record, job)
