"""The ``compression`` event (SPEC 6.7): its type, statuses and levels, and the one builder of its
payload, shared by the in-run emitter and the manual, bulk and undo services."""

from __future__ import annotations

from typing import Any

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


def describe_error(exc: BaseException) -> str:
    """The error text of a ``failed`` event and of a failed compression's message."""
    return f"{type(exc).__name__}: {exc}"
