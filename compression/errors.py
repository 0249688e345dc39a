"""Domain errors of thread maintenance, each mapped once to ``{"code", "message"}`` by the API, and
the model errors a bulk task retries."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from openai import APIConnectionError, APITimeoutError, InternalServerError, RateLimitError

from agent_platform.errors import ApplicationError, Conflict, Unprocessable

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


class IdempotencyConflict(Conflict):
    code = "idempotency_conflict"
    default_message = _("This Idempotency-Key was already used on another thread.")


class NothingToUndo(Conflict):
    code = "nothing_to_undo"
    default_message = _("There is no compression to undo on this thread.")


class StalePreview(Conflict):
    code = "stale_preview"
    default_message = _("The thread changed since this preview; nothing was compressed. Preview it again.")
