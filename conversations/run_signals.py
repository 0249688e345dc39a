"""Per-run signals shared through the cache: the reply streamed so far, and the Stop request.

The cache is Redis when ``REDIS_URL`` is set (web processes and Celery workers see one store) and
process-local otherwise (runs then execute in threads of the web process). The database stays the
source of truth for a Stop (``AgentRun.cancel_requested_at``); the cache flag only lets the executor
see it on every streamed chunk without a query per token.

While Redis does not answer, the cache degrades (``config.redis_pool``): a streamed text reads as "",
and the flag is read from the database instead (``cancel_flag_read`` says when it cannot answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.db import connection
from langchain_core.callbacks import BaseCallbackHandler

from agent_platform.cache_outage import cache_available

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
    """Whether Stop was requested: the cache flag, or the database's record while the cache is down."""
    flag = cancel_flag_read(run_id=run_id)
    return cancel_recorded(run_id=run_id) if flag is None else flag


def cancel_flag_read(*, run_id: int) -> bool | None:
    """The cache flag; ``None`` when the cache cannot answer (Redis unreachable)."""
    flag = cache.get(_cancel_key(run_id))
    if flag is None and not cache_available():
        return None
    return bool(flag)


def cancel_recorded(*, run_id: int) -> bool:
    """The database's record of a Stop (the source of truth). A connection this call had to open (a
    graph thread's) is closed after it, so it never outlives the check."""
    from conversations.models import AgentRun  # the models import nothing of this module's callers

    opened = connection.connection is None
    try:
        return AgentRun.objects.filter(pk=run_id, cancel_requested_at__isnull=False).exists()
    finally:
        if opened and not connection.in_atomic_block:
            connection.close()


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
