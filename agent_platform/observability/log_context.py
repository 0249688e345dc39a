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
from contextvars import ContextVar, Token

FIELDS = ("request_id", "thread_id", "run_id")
_vars: dict[str, ContextVar[str | None]] = {name: ContextVar(name, default=None) for name in FIELDS}


def log_bind(**ids: object) -> list[tuple[ContextVar[str | None], Token[str | None]]]:
    """Log records carry these ids from now on; ``log_unbind`` the result to restore the previous."""
    return [(_vars[name], _vars[name].set(str(value))) for name, value in ids.items() if value is not None]


def log_unbind(tokens: list[tuple[ContextVar[str | None], Token[str | None]]]) -> None:
    for var, token in reversed(tokens):
        var.reset(token)


@contextmanager
def log_context(**ids: object) -> Iterator[None]:
    """Within the block, log records carry these ids (``request_id``, ``thread_id``, ``run_id``)."""
    tokens = log_bind(**ids)
    try:
        yield
    finally:
        log_unbind(tokens)


def current_ids() -> dict[str, str | None]:
    return {name: var.get() for name, var in _vars.items()}


class LogContextFilter(logging.Filter):
    """Puts the current ids on every record (``None`` where none is set); never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in current_ids().items():
            if not hasattr(record, name) or getattr(record, name) is None:
                setattr(record, name, value)
        return True
