"""Domain errors of thread maintenance, each mapped once to ``{"code", "message"}`` by the API, and
the model errors a bulk task retries."""

from __future__ import annotations

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

    def __init__(self, message: str = "This thread's agent does not support context compression.") -> None:
        super().__init__(message)


class SummaryFailed(ApplicationError):
    status = 502
    code = "summary_failed"


class IdempotencyConflict(Conflict):
    code = "idempotency_conflict"

    def __init__(self, message: str = "This Idempotency-Key was already used on another thread.") -> None:
        super().__init__(message)


class NothingToUndo(Conflict):
    code = "nothing_to_undo"

    def __init__(self, message: str = "There is no compression to undo on this thread.") -> None:
        super().__init__(message)


class StalePreview(Conflict):
    code = "stale_preview"

    def __init__(
        self,
        message: str = "The thread changed since this preview; nothing was compressed. Preview it again.",
    ) -> None:
        super().__init__(message)
