"""The ids every log line carries (request, thread, run), held in context variables.

The request middleware (``config.ops.RequestContextMiddleware``) sets the request id and the thread a
URL names; the run executor sets the thread and run it executes. ``LogContextFilter`` copies them onto
each record, so ``LOG_FORMAT=json`` lines (python-json-logger) and plain lines alike can show them.
Context variables follow threads started with ``contextvars.copy_context`` and asyncio tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

FIELDS = ("request_id", "thread_id", "run_id")
_vars: dict[str, ContextVar[str | None]] = {name: ContextVar(name, default=None) for name in FIELDS}


def log_set(**ids: object) -> None:
    """Set these ids (``None`` clears one) with no way back: for a request, whose middleware hooks
    may each run in a context of their own under ASGI, so a token taken in one cannot be reset in the
    next. The request middleware sets all three when a request starts and clears them when it ends."""
    for name, value in ids.items():
        _vars[name].set(None if value is None else str(value))


@contextmanager
def log_context(**ids: object) -> Iterator[None]:
    """Within the block, log records carry these ids (``request_id``, ``thread_id``, ``run_id``); the
    previous values come back after it. For code that enters and leaves in one context (a run)."""
    tokens = [(_vars[name], _vars[name].set(str(value))) for name, value in ids.items() if value is not None]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def current_ids() -> dict[str, str | None]:
    return {name: var.get() for name, var in _vars.items()}


class LogContextFilter(logging.Filter):
    """Puts the current ids on every record (``None`` where none is set); never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = current_ids()
        # Django logs a request's error response (``django.request``) after the middleware is done with
        # it: those records carry the request itself, which carries its ids.
        request = getattr(record, "request", None)
        if request is not None and ids["request_id"] is None:
            ids["request_id"] = getattr(request, "request_id", None)
            match = getattr(request, "resolver_match", None)
            thread = match.kwargs.get("thread_id") if match is not None else None
            ids["thread_id"] = str(thread) if thread else None
        for name, value in ids.items():
            if getattr(record, name, None) is None:
                setattr(record, name, value)
        return True
