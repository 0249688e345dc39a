"""Per-run signals shared through the cache: the reply streamed so far, and the Stop request.

The cache is Redis when ``REDIS_URL`` is set (web processes and Celery workers see one store) and
process-local otherwise (runs then execute in threads of the web process). The database stays the
source of truth for a Stop (``AgentRun.cancel_requested_at``); the cache flag only lets the executor
see it on every streamed chunk without a query per token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from langchain_core.callbacks import BaseCallbackHandler

# A reply streams for minutes at most; an abandoned key must not outlive a crashed worker for long.
TTL_SECONDS = 60 * 60


def _stream_key(run_id: int) -> str:
    return f"run:{run_id}:stream"


def _cancel_key(run_id: int) -> str:
    return f"run:{run_id}:cancel"


def stream_set(*, run_id: int, text: str) -> None:
    """Store the text of the reply being streamed (the one writer is the run's executor)."""
    cache.set(_stream_key(run_id), text, TTL_SECONDS)


def stream_text(*, run_id: int) -> str:
    """The text streamed so far of the run's current reply ("" when none is streaming)."""
    return cache.get(_stream_key(run_id)) or ""


def cancel_flag_set(*, run_id: int) -> None:
    cache.set(_cancel_key(run_id), True, TTL_SECONDS)


def cancel_flag_is_set(*, run_id: int) -> bool:
    return bool(cache.get(_cancel_key(run_id)))


def run_signals_clear(*, run_id: int) -> None:
    cache.delete_many([_stream_key(run_id), _cancel_key(run_id)])


class RunCancelled(Exception):
    """The user stopped the run: raised inside the model call so the model stops streaming at once."""


class StopOnCancel(BaseCallbackHandler):
    """Ends a streaming model call on its next token once Stop was requested (the cache flag only:
    this runs in LangGraph's worker threads, which must not open database connections)."""

    raise_error = True

    def __init__(self, run_id: int, *, stopped: Callable[[], bool]) -> None:
        self.run_id = run_id
        # ``stopped``: the run's own check of the flag (``RunStopChecks.flag``: not a read per token).
        self.stopped = stopped

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        if self.stopped():
            raise RunCancelled()
