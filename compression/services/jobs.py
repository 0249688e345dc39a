"""Compression jobs (``CompressionJob``): claim under the thread's row lock, work with no transaction
open, apply under the row lock only if the checkpoint is the one the work read (compare-and-swap).

A job in ``queued`` or ``running`` holds its thread (the busy rule, through ``thread_maintenance_check``):
intake answers 409 at once instead of waiting on a lock. The worker leases the job as runs are leased
(``conversations.services.leases``); a job whose worker died is retried once, then failed
(``compress_jobs_recover``). Stop (``compress_job_cancel``) is a compare-and-swap on the job's status:
the work drops its summary call and the apply finds nothing to apply.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from agent_platform.calibration.selectors import calibration_for
from agent_platform.errors import ApplicationError
from agent_platform.runtime.graph import state_repository_for
from agent_platform.runtime.public_errors import run_error_public
from agent_platform.runtime.state_repository import AgentStateRepository, CheckpointMoved
from compression.errors import (
    CapabilityMissing,
    IdempotencyConflict,
    JobCancelled,
    JobFailed,
    ModelUnavailable,
    SummaryFailed,
    ThreadChanged,
)
from compression.models import CompressionJob
from compression.services.forced import (
    Notice,
    collector_paused,
    forced_nothing_to_do,
    require_idle,
    run_forced,
)
from compression.services.job_control import (
    compress_job_reclaim,
    history_orphan_remove,
    history_pending_set,
    job_announce,
    job_get,
    job_orphaned,
)
from compression.services.preview import preview_check
from compression.services.records import record_accounted, record_from_manual, record_summary_failure
from context_engine.config import COMPRESSION_CAPABILITY
from context_engine.errors import Stopped
from context_engine.events import describe_error
from context_engine.manual.apply import STATUS_COMPLETED, ManualCompression
from context_engine.policy.pressure import refreshed_usage
from context_engine.state import TOKEN_USAGE_KEY, merge_token_usage
from context_engine.summary.call import ledger_update
from context_engine.tokens.calibration import Calibration
from conversations.errors import ThreadNotFound
from conversations.models import Conversation
from conversations.services.leases import lease_renewed, worker_name
from conversations.services.pressure import conversation_pressure_update
from conversations.services.threads import conversation_lock

logger = logging.getLogger(__name__)

CANCEL_CHECK_SECONDS = 0.5  # how often a summary call in flight asks whether its job was stopped


@dataclass(frozen=True)
class _Request:
    trigger: str
    requested_by: AbstractBaseUser | None
    idempotency_key: str | None
    preview_id: str | None


@dataclass(frozen=True)
class _NothingToDo:
    """A job's ``no_op``, decided before the job holds the thread, on the checkpoint ``version``."""

    manual: ManualCompression
    version: str
    started_at: datetime


def compress_job_submit(
    *,
    lock: Callable[[], AbstractContextManager[Conversation]],
    trigger: str,
    requested_by: AbstractBaseUser | None,
    idempotency_key: str | None,
    preview_id: str | None = None,
) -> CompressionJob:
    """Claim the thread for a compression: under its row lock, replay the job a key already made (409
    ``idempotency_conflict`` when that was on another thread), else check the capability, the preview
    (409 ``stale_preview``) and the busy rule (409 ``thread_busy``), and record a ``queued`` job. The
    lock is held for these checks only; the summary is made later, with no transaction open.

    Without a preview, whether the job would change anything is decided first, with no lock and no
    model call, from the checkpoint's stored estimates: a job with nothing to fold is recorded ended
    (``no_change``, with its record) and never holds the thread, so no send is refused meanwhile."""
    request = _Request(trigger, requested_by, idempotency_key, preview_id)
    early: _NothingToDo | None = None
    if preview_id is None:
        with lock() as conversation:
            if earlier := _admitted(conversation, request):
                return earlier
        early = _nothing_to_do(conversation)
    with lock() as conversation:
        if earlier := _admitted(conversation, request):  # again: a run or a job may have come meanwhile
            return earlier
        version = ""
        if preview_id is not None:
            snapshot = state_repository_for(conversation).snapshot()
            preview_check(conversation, dict(snapshot.values or {}), preview_id=preview_id)
            version = AgentStateRepository.version_of(snapshot)  # the apply must find this very checkpoint
            require_idle(conversation)
        if early is not None and state_repository_for(conversation).version() != early.version:
            early = None  # the checkpoint moved since: the job decides on what it finds
        job = _job_create(conversation, request, version=version, early=early)
        job_announce(job, conversation.thread_id)
        return job


def _admitted(conversation: Conversation, request: _Request) -> CompressionJob | None:
    """The job the request's key made already (on this thread), else None once the request may go on:
    the thread is active and its agent compresses (the busy rule is the caller's, after the preview)."""
    if conversation.status != Conversation.Status.ACTIVE:
        raise ThreadNotFound()
    if request.idempotency_key and (
        earlier := CompressionJob.objects.filter(idempotency_key=request.idempotency_key).first()
    ):
        if earlier.conversation_id != conversation.pk:
            raise IdempotencyConflict()
        return earlier
    if not conversation.agent.has_capability(COMPRESSION_CAPABILITY):
        raise CapabilityMissing()
    if request.preview_id is None:
        require_idle(conversation)  # before reading the checkpoint: a busy thread is refused at once
    return None


def _nothing_to_do(conversation: Conversation) -> _NothingToDo | None:
    """With no lock: the job's ``no_op`` if the checkpoint as it is now gives it nothing to fold."""
    started_at = timezone.now()
    snapshot = state_repository_for(conversation).snapshot()
    values = dict(snapshot.values or {})
    manual = forced_nothing_to_do(conversation, values, calibration_for(agent=conversation.agent))
    if manual is None:
        return None
    return _NothingToDo(manual, AgentStateRepository.version_of(snapshot), started_at)


def _job_create(
    conversation: Conversation, request: _Request, *, version: str, early: _NothingToDo | None
) -> CompressionJob:
    """The job: ``queued``, or ended ``no_change`` with its record when decided early."""
    fields: dict[str, Any] = {}
    record = None
    try:
        # A concurrent use of the key on another thread waits on the unique index, then conflicts.
        with transaction.atomic():
            if early is not None:
                record = record_from_manual(
                    conversation=conversation,
                    trigger=request.trigger,
                    requested_by=request.requested_by,
                    manual=early.manual,
                    started_at=early.started_at,
                    account=False,
                )
                fields = {
                    "status": CompressionJob.Status.NO_CHANGE,
                    "record": record,
                    "result": record.result,
                    "started_at": early.started_at,
                    "finished_at": timezone.now(),
                }
                version = early.version
            job = CompressionJob.objects.create(
                conversation=conversation,
                requested_by=request.requested_by,
                trigger=request.trigger,
                preview_id=request.preview_id or "",
                idempotency_key=request.idempotency_key or None,
                checkpoint_version=version,
                **fields,
            )
    except IntegrityError as exc:
        raise IdempotencyConflict() from exc
    if record is not None:
        record_accounted(record)
        Notice(job.trigger, job_id=job.pk).at_once(conversation, record)
    return job


def compress_job_perform(*, job_id: int) -> CompressionJob | None:
    """Claim a ``queued`` job and carry it to its end; returns it as it ended (None: no such job).
    Idempotent through status: a job another worker holds, or one already finished, is returned as is.
    A job still ``running`` under a lost worker (a redelivered task) is reclaimed first."""
    job = job_get(job_id)
    if job is None:
        return None
    if job.status == CompressionJob.Status.RUNNING and job_orphaned(job):
        compress_job_reclaim(job=job)
    worker = f"{worker_name()}:{uuid.uuid4().hex[:8]}"
    now = timezone.now()
    claimed = CompressionJob.objects.filter(pk=job_id, status=CompressionJob.Status.QUEUED).update(
        status=CompressionJob.Status.RUNNING,
        worker=worker,
        started_at=now,
        heartbeat_at=now,
        attempts=F("attempts") + 1,
    )
    if not claimed:
        return job_get(job_id)
    job = job_get(job_id)
    job_announce(job, job.conversation.thread_id)

    def held() -> QuerySet[CompressionJob]:
        return CompressionJob.objects.filter(pk=job_id, status=CompressionJob.Status.RUNNING, worker=worker)

    with lease_renewed(held=held, name=f"compression-job-{job_id}-lease"):
        _work(job, held=held)
    job = job_get(job_id)
    job_announce(job, job.conversation.thread_id)
    return job


def _work(job: CompressionJob, *, held: Callable[[], QuerySet[CompressionJob]]) -> None:
    conversation = job.conversation
    notice = Notice(job.trigger, job_id=job.pk)
    started_at = timezone.now()
    spent: list[int] = []  # the summary calls made: a provider bills them even when they fail
    values: dict[str, Any] = {}
    version = job.checkpoint_version
    try:
        repository = state_repository_for(conversation)
        snapshot = repository.snapshot()
        values, read = dict(snapshot.values or {}), AgentStateRepository.version_of(snapshot)
        if version and version != read:  # the preview it applies showed another checkpoint
            raise ThreadChanged()
        version = read
        held().update(checkpoint_version=version)
        notice.start(conversation)
        calibration = calibration_for(agent=conversation.agent)
        last_check = [time.monotonic()]

        def stopped() -> bool:
            if time.monotonic() - last_check[0] < CANCEL_CHECK_SECONDS:
                return False
            last_check[0] = time.monotonic()
            return not held().exists()

        manual = run_forced(conversation, values, calibration, spent=spent, stop=stopped)
        history_pending_set(held, manual)
        # Computed before the lock: it depends only on the state read, which the apply checks is current.
        update = _checkpoint_update(conversation, values, manual, calibration)
        outcome = _apply(
            job,
            held=held,
            update=update,
            usage_before=values.get(TOKEN_USAGE_KEY),
            version=version,
            manual=manual,
            started_at=started_at,
        )
    except Stopped:
        history_orphan_remove(job.pk)
        notice.fail(str(JobCancelled.default_message))
        return
    except Exception as exc:  # noqa: BLE001 - recorded on the job; the worker goes on
        if isinstance(exc, ApplicationError):
            # Plain words for the thread's users; the exception as raised stays for the admin and the log.
            error, detail = exc, describe_error(exc.__cause__ or exc)
            logger.warning("Compression job %s failed: %s", job.pk, detail)
        else:
            logger.exception("Compression job %s failed", job.pk)
            error = JobFailed(f"{JobFailed.default_message} ({run_error_public(exc)})")
            detail = describe_error(exc)
        history_orphan_remove(job.pk)  # a summary appended, then not applied: taken back
        _fail(
            job,
            held=held,
            error=error,
            detail=detail,
            billed=_Billed(calls=spent, values=values, version=version),
            started_at=started_at,
        )
        notice.fail(error.message)
        return
    finally:
        notice.close()
    notice.complete(outcome)


def _checkpoint_update(
    conversation: Conversation, values: Mapping[str, Any], manual: ManualCompression, calibration: Calibration
) -> dict[str, Any]:
    """The update to write: the engine's, with ``token_usage`` refreshed (empty when nothing changes)."""
    if not manual.update:
        return {}
    agent = conversation.agent
    usage = refreshed_usage(
        values,
        manual.update,
        config=agent.compression_config(),
        result=manual.body(),
        now=timezone.now(),
        calibration=calibration,
    )
    return {**manual.update, TOKEN_USAGE_KEY: {**manual.update.get(TOKEN_USAGE_KEY, {}), **usage}}


def _apply(
    job: CompressionJob,
    *,
    held: Callable[[], QuerySet[CompressionJob]],
    update: dict[str, Any],
    usage_before: Mapping[str, Any] | None,
    version: str,
    manual: ManualCompression,
    started_at: datetime,
):
    """Under the row lock: refuse a changed checkpoint (``ThreadChanged``) or a job no longer held
    (``Stopped``: cancelled, or taken back by recovery); else record, set the job's end, write the
    checkpoint last, as a compare-and-swap on ``version`` (any failure before it, the swap's refusal
    included, rolls everything back), count the record, commit."""
    with collector_paused(), conversation_lock(conversation_id=job.conversation_id) as conversation:
        if conversation.status != Conversation.Status.ACTIVE:
            raise ThreadNotFound()
        repository = state_repository_for(conversation)
        if not update and repository.version() != version:  # else the write below compares
            raise ThreadChanged()
        record = record_from_manual(
            conversation=conversation,
            trigger=job.trigger,
            requested_by=job.requested_by,
            manual=manual,
            started_at=started_at,
            account=False,
        )
        status = (
            CompressionJob.Status.SUCCEEDED
            if manual.status == STATUS_COMPLETED
            else CompressionJob.Status.NO_CHANGE
        )
        # The compare-and-swap that Stop races with: whichever commits first wins, never both.
        if not held().update(status=status, record=record, result=record.result, finished_at=timezone.now()):
            raise Stopped()
        if update:
            # The row keeps the whole token_usage the checkpoint will hold: the update merged as its reducer does.
            usage = merge_token_usage(usage_before, update[TOKEN_USAGE_KEY])
            conversation_pressure_update(conversation_id=conversation.pk, token_usage=usage)
            try:
                # One checkpoint load under the lock: the swap compares on the read the write builds on.
                repository.update(update, expected_version=version)
            except CheckpointMoved as exc:
                raise ThreadChanged() from exc
        record_accounted(record)  # counted once it is sure to commit (not for a job stopped meanwhile)
    return record


@dataclass(frozen=True)
class _Billed:
    """The summary calls a job made (a provider bills them even when the job fails: their input tokens)
    and the checkpoint they were made from, whose spend-guard ledger enters them."""

    calls: Sequence[int]
    values: Mapping[str, Any]
    version: str


def _fail(
    job: CompressionJob,
    *,
    held: Callable[[], QuerySet[CompressionJob]],
    error: ApplicationError,
    detail: str,
    billed: _Billed,
    started_at: datetime,
) -> None:
    """The job's failure, recorded; the spend guard's ledger bills the summary calls made, but only on
    the checkpoint they were made from (nothing else of the state changes)."""
    with conversation_lock(conversation_id=job.conversation_id) as conversation:
        record = None
        if isinstance(error, SummaryFailed):
            record = record_summary_failure(
                conversation_id=conversation.pk,
                trigger=job.trigger,
                requested_by=job.requested_by,
                error=error.message,
                error_detail=detail,
                started_at=started_at,
                account=False,
            )
        ended = held().update(
            status=CompressionJob.Status.FAILED,
            error_code=error.code,
            error=error.message,
            error_detail=detail,
            retryable=isinstance(error, ModelUnavailable),
            record=record,
            finished_at=timezone.now(),
        )
        if not ended:
            transaction.set_rollback(True)  # stopped or taken back meanwhile: its new owner decides
            return
        if record is not None:
            record_accounted(record)  # counted once it is sure to commit
        if billed.calls and billed.values:
            with suppress(CheckpointMoved):  # billed only on the checkpoint the calls were made from
                state_repository_for(conversation).update(
                    ledger_update(billed.values, billed.calls, now=datetime.now(UTC)),
                    expected_version=billed.version,
                )
