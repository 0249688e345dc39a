"""The engine's errors: plain exceptions, no HTTP status and no translation. The services and the
middleware translate them (``compression.errors`` maps them to ``{"code", "message"}``)."""

from __future__ import annotations

from typing import Any


class NothingToUndo(Exception):
    """No summary is recorded in the thread's state, so there is nothing to undo."""


class SummaryError(RuntimeError):
    """A summary cannot be produced; state must not change."""


class ErrorSummaryError(SummaryError):
    """The summary model answered with an error's text (``error_summaries``) instead of a summary."""


class EmptySummaryError(SummaryError):
    """The summary model answered with nothing usable."""


class NotASummaryError(SummaryError):
    """The summary model's answer does not read as a summary (``summary.validation``)."""


class StoreError(Exception):
    """A file could not be written or read; the caller decides whether that is fatal."""


class OffloadError(Exception):
    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"Failed to write tool result to {path}: {reason}")
        self.path = path
        self.reason = reason


class CompressionError(RuntimeError):
    """Compression failed and the conversation does not fit the model's context window."""


class SummaryNotSmaller(Exception):
    """The summary (its message, with the pinned messages it keeps) would not be smaller than the
    messages it folds: a compression never makes the request bigger, so nothing is applied."""

    def __init__(self, *, summary_tokens: int, folded_tokens: int) -> None:
        super().__init__(
            f"The summary ({summary_tokens} tokens) would not be smaller than the messages it folds "
            f"({folded_tokens} tokens), so nothing was applied."
        )
        self.summary_tokens = summary_tokens
        self.folded_tokens = folded_tokens


class Stopped(Exception):
    """A driver was told to stop between effects or during a summary call: nothing after it ran."""


class StoppedAfterSummary(Stopped):
    """Stop came while the request a new summary made room for was out. The summary was paid for and
    is valid, so it is kept: ``update`` is the state update that applies it, ``event`` its
    ``completed`` compression event (the stream that would carry both is being closed)."""

    def __init__(self, *, update: dict[str, Any], event: dict[str, Any]) -> None:
        super().__init__("stopped after a summary was made; the summary is kept")
        self.update, self.event = update, event
