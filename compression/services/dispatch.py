"""Where a compression job runs: on a Celery worker when runs do (``REDIS_URL`` set), in a thread of
this server on the embedded default, inline under tests (``RUN_EXECUTION``: one setting for both).
The Celery task lives here, beside the dispatcher that sends it (``compression.tasks`` re-exports it),
and so does recovery, which starts the jobs it re-queues."""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from compression.models import CompressionJob
from compression.services.job_control import compress_job_reclaim, job_orphaned
from compression.services.jobs import compress_job_perform
from conversations.services.leases import run_lease_duration

logger = logging.getLogger(__name__)


def compress_job_start(*, job_id: int) -> None:
    """Start the job once the transaction that queued it commits (at once outside one; inline at once
    in the ``eager`` mode of tests, whose test transaction never commits)."""
    if settings.RUN_EXECUTION == "eager":
        compress_job_perform(job_id=job_id)
    else:
        transaction.on_commit(lambda: _start(job_id))


def _start(job_id: int) -> None:
    mode = settings.RUN_EXECUTION
    if mode == "celery":
        try:
            compress_job_task.delay(job_id)
        except (KombuOperationalError, OSError):  # the broker (Redis) is down: recovery starts it later
            logger.warning("Could not send compression job %s to the workers; it stays queued", job_id)
    elif mode == "inprocess":
        name = f"compression-job-{job_id}"
        threading.Thread(target=_perform_in_thread, args=(job_id,), name=name, daemon=True).start()
    else:
        compress_job_perform(job_id=job_id)


def _perform_in_thread(job_id: int) -> None:
    close_old_connections()
    try:
        compress_job_perform(job_id=job_id)
    except Exception:  # noqa: BLE001 - a thread has no caller to report to
        logger.exception("Compression job %s failed outside its own error handling", job_id)
    finally:
        connections.close_all()


# acks_late + reject_on_worker_lost: a worker killed mid-job gets the task redelivered, and the
# redelivery reclaims the job (retried once, then failed) before performing it.
@shared_task(name="compression.tasks.compress_job", acks_late=True, reject_on_worker_lost=True)
def compress_job_task(job_id: int) -> str | None:
    job = compress_job_perform(job_id=job_id)
    return None if job is None else job.status


def compress_jobs_recover(*, now: datetime | None = None, start: bool = True) -> dict[str, list[int]]:
    """Reclaim every ``running`` job whose worker is gone, and start again (``start``) the re-queued ones
    and those queued for a lease or more (their start was lost with a process; a second start of a job
    is harmless: one claim wins). Run by the run-recovery timer of every server and worker
    (``conversations.signals.recovery_pass``)."""
    now = now or timezone.now()
    report: dict[str, list[int]] = {"queued": [], "failed": [], "started": []}
    running = CompressionJob.objects.filter(status=CompressionJob.Status.RUNNING).select_related(
        "conversation"
    )
    for job in running:
        if not job_orphaned(job, now=now):
            continue
        outcome = compress_job_reclaim(job=job)
        if outcome is not None:
            report[outcome].append(job.pk)
    waiting = CompressionJob.objects.filter(
        status=CompressionJob.Status.QUEUED, created_at__lt=now - run_lease_duration()
    )
    report["started"] = sorted({*report["queued"], *waiting.values_list("pk", flat=True)})
    if start:
        for job_id in report["started"]:
            compress_job_start(job_id=job_id)
    return report
