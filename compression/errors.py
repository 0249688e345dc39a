"""Domain errors of thread maintenance, each mapped once to ``{"code", "message"}`` by the API, and
the model errors a bulk task retries."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from openai import APIConnectionError, APITimeoutError, InternalServerError, RateLimitError

from agent_platform.errors import ApplicationError, Conflict, NotFound, Unprocessable

# Model errors worth a retry with backoff (Celery path); a busy thread is reported, never retried.
TRANSIENT_MODEL_ERRORS: tuple[type[BaseException], ...] = (
    APIConnectionError,
    APITimeoutError,
    InternalServerError,
    RateLimitError,
)


class CapabilityMissing(Unprocessable):
    code = "capability_missing"
    default_message = _("This thread's agent does not support context compression.")


class SummaryFailed(ApplicationError):
    status = 502
    code = "summary_failed"


class StorageFull(SummaryFailed):
    """The workdir's disk (or quota) is full: nothing was written, nothing compressed."""

    status = 507
    code = "storage_full"
    default_message = _(
        "The server's disk is full, so the conversation history could not be saved; nothing was "
        "compressed. Try again once space is freed."
    )


class ModelUnavailable(SummaryFailed):
    """A summary that failed on a transient model error (worth a retry later: the bulk task does)."""


class IdempotencyConflict(Conflict):
    code = "idempotency_conflict"
    default_message = _("This Idempotency-Key was already used on another thread.")


class NothingToUndo(Conflict):
    code = "nothing_to_undo"
    default_message = _("There is no compression to undo on this thread.")


class StalePreview(Conflict):
    code = "stale_preview"
    default_message = _("The thread changed since this preview; nothing was compressed. Preview it again.")


class ThreadChanged(Conflict):
    code = "thread_changed"
    default_message = _("The thread changed while its summary was written; nothing was applied.")


class JobNotFound(NotFound):
    default_message = _("There is no such compression job on this thread.")


class JobCancelled(Conflict):
    code = "job_cancelled"
    default_message = _("The compression was stopped; nothing was applied.")


class JobFinished(Conflict):
    code = "job_finished"
    default_message = _("The compression has already finished; there is nothing to stop.")


class WorkerLost(ApplicationError):
    status = 502
    code = "worker_lost"
    default_message = _("The worker compressing this thread stopped twice; the compression was given up.")


class JobFailed(ApplicationError):
    status = 502
    code = "compression_failed"
    default_message = _("The compression failed; nothing was applied.")
