"""The ``compression`` event (SPEC 6.7): its type, statuses and levels, and the one builder of its
payload, shared by the in-run emitter and the manual, bulk and undo services."""

from __future__ import annotations

from typing import Any

from context_engine.errors import (
    CompressionError,
    EmptySummaryError,
    ErrorSummaryError,
    NotASummaryError,
    OffloadError,
    StoreError,
    SummaryError,
    SummaryNotSmaller,
)

EVENT_TYPE = "compression"
STARTED, COMPLETED, FAILED = "started", "completed", "failed"
LEVEL_COMPACTION, LEVEL_SUMMARY, LEVEL_UNDO = "compaction", "summary", "undo"
# What a ``completed`` compression achieved is its ``outcome`` (``context_engine.outcomes``).


def compression_event(
    *,
    status: str,
    level: str,
    before_tokens: int | None = None,
    after_tokens: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The payload (without ``type``): ``{status, level, before_tokens, after_tokens, **extra}``."""
    return {
        "status": status,
        "level": level,
        "before_tokens": before_tokens,
        "after_tokens": after_tokens,
        **extra,
    }


def stopped_event(*, level: str, before_tokens: int | None, **files: Any) -> dict[str, Any]:
    """The ``failed`` payload of a compression the user's Stop ended: in words, ``stopped: true``."""
    return compression_event(
        status=FAILED,
        level=level,
        before_tokens=before_tokens,
        **{"saved_files": [], "failed_files": [], **files},
        error=STOPPED_BY_USER,
        error_detail="Stopped",
        failure_kind=STOPPED,
        stopped=True,
    )


def describe_error(exc: BaseException) -> str:
    """The exception as raised (class and text): a ``failed`` event's ``error_detail``, for the admin."""
    return f"{type(exc).__name__}: {exc}"


# What users read for a failure that is not the engine's own: a provider's text can name a host or
# echo part of a key, and an exception's class means nothing to them.
SUMMARY_CALL_FAILED = "The summary call to the model failed."
FILE_NOT_SAVED = "A file could not be saved in the thread's workdir."
# A compression the user's Stop ended (its ``failed`` event carries ``stopped: true``): not a failure.
STOPPED_BY_USER = "Stopped by the user before it ended; nothing was changed."


def engine_error_words(exc: BaseException) -> str | None:
    """The engine's own account of one of its errors, in words a thread's users may read (no class, no
    provider text, no host path); None for an error that is not the engine's."""
    if isinstance(exc, ErrorSummaryError):
        return "The summary model answered with an error instead of a summary."
    if isinstance(exc, NotASummaryError):
        return "The summary model's answer is not a summary."
    if isinstance(exc, (CompressionError, SummaryNotSmaller, EmptySummaryError, SummaryError)):
        return str(exc)  # the engine's sentences and figures
    if isinstance(exc, (StoreError, OffloadError)) or (
        isinstance(exc, OSError) and not isinstance(exc, (ConnectionError, TimeoutError))
    ):
        return FILE_NOT_SAVED
    return None


# Why a summary call failed, as a code each reader words in its own language (a ``failed`` event's
# ``failure_kind``, a failed record's ``reason``). Read from the error's structure, never its text.
RATE_LIMIT, TIMEOUT, UNREACHABLE, REFUSED, SERVER_ERROR = (
    "rate_limit",
    "timeout",
    "unreachable",
    "refused",
    "server_error",
)
NOT_A_SUMMARY, FILE_ERROR, OTHER_FAILURE = "not_a_summary", "file_error", "other"
STOPPED = "stopped"  # not a failure: the user's Stop ended it (``Emitter.stop``)


def failure_kind(exc: BaseException) -> str:
    """``exc`` as one of the failure codes above (an OpenAI-protocol client's errors carry a
    ``status_code``; its timeouts and connection errors name themselves)."""
    if isinstance(exc, SummaryError):
        return NOT_A_SUMMARY
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(getattr(exc, "response", None), "status_code", None)
    names = {cls.__name__ for cls in type(exc).__mro__}
    if status == 429 or "RateLimitError" in names:
        return RATE_LIMIT
    if isinstance(exc, TimeoutError) or any("Timeout" in name for name in names):
        return TIMEOUT
    if isinstance(exc, ConnectionError) or any("Connection" in name for name in names):
        return UNREACHABLE
    if isinstance(status, int) and status >= 500:
        return SERVER_ERROR
    if isinstance(status, int) and 400 <= status < 500:
        return REFUSED
    if engine_error_words(exc) == FILE_NOT_SAVED:
        return FILE_ERROR
    return OTHER_FAILURE


def describe_error_for_users(exc: BaseException) -> str:
    """A ``failed`` event's ``error``: what the thread's pages show."""
    return engine_error_words(exc) or SUMMARY_CALL_FAILED
