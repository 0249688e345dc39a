"""Compression events on the LangGraph custom stream (SPEC 6.7): ``started`` once per model call, then
exactly one of ``completed`` or ``failed``. Payloads are JSON-serializable primitives."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import BaseMessage
from langgraph.config import get_stream_writer

from context_engine import outcomes
from context_engine.compaction.tool_results import FailedToolResult, SavedToolResult
from context_engine.events import (
    COMPLETED,
    EVENT_TYPE,
    FAILED,
    LEVEL_COMPACTION,
    STARTED,
    compression_event,
    describe_error,
    describe_error_for_users,
    failure_kind,
    stopped_event,
)
from context_engine.tokens.messages import DEFAULT_PROFILE, TokenProfile

Writer = Callable[[Any], None]


def stream_writer(request: ModelRequest) -> Writer | None:
    """The request's stream writer; ``None`` outside a graph (events are then simply not sent)."""
    runtime = getattr(request, "runtime", None)
    writer: Writer | None = getattr(runtime, "stream_writer", None)  # the Runtime's StreamWriter
    if writer is not None:
        return writer
    try:
        return get_stream_writer()
    except RuntimeError:
        return None


class Emitter:
    """The events of one model call; tracks what the ``failed`` event should report. With the call's
    trigger, overhead and profile it also says how a compression ended (``outcomes.ended``)."""

    def __init__(
        self,
        writer: Writer | None,
        *,
        before_tokens: int,
        trigger_tokens: int = 0,
        overhead_tokens: int = 0,
        profile: TokenProfile = DEFAULT_PROFILE,
    ) -> None:
        self.writer = writer
        self.trigger_tokens, self.overhead_tokens, self.profile = trigger_tokens, overhead_tokens, profile
        self.level = LEVEL_COMPACTION
        self.before_tokens = before_tokens
        self.after_tokens: int | None = None
        self.saved_files: dict[str, None] = {}  # ordered set of paths
        self.failed_files: list[dict[str, str]] = []
        self.started = False
        self.finished = False

    def record_files(self, saved: Iterable[SavedToolResult], failed: Iterable[FailedToolResult]) -> None:
        self.saved_files.update(dict.fromkeys(record.path for record in saved))
        for record in failed:
            self.failed_files.append({"path": record.path, "tool": record.tool_name, "error": record.error})

    def start(self, *, level: str | None = None) -> None:
        if self.started:
            return
        self.started, self.level = True, level or self.level
        self._emit(STARTED)

    def complete(self, *, level: str, after_tokens: int, **extra: Any) -> None:
        self.level, self.after_tokens, self.finished = level, after_tokens, True
        self._emit(COMPLETED, **self._files(), **extra)

    def sent(
        self,
        *,
        level: str,
        after_tokens: int,
        messages: Sequence[BaseMessage],
        why: dict[str, Any] | None = None,
        **extra: Any,
    ) -> None:
        """``completed`` for a request that went out as ``messages``, with its ``outcome`` and, when it
        still reached the trigger, its ``reason_detail`` (else ``why``, when the caller has one)."""
        event = self.sent_event(level=level, after_tokens=after_tokens, messages=messages, why=why, **extra)
        if self.writer is not None:
            self.writer(event)

    def sent_event(
        self,
        *,
        level: str,
        after_tokens: int,
        messages: Sequence[BaseMessage],
        why: dict[str, Any] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """``sent``'s event, returned rather than written: for a compression kept while the stream that
        would carry it is being closed (``StoppedAfterSummary``). The call counts as ended."""
        outcome, reason = outcomes.ended(
            folded=level,
            after_tokens=after_tokens,
            sent=messages,
            overhead_tokens=self.overhead_tokens,
            trigger_tokens=self.trigger_tokens,
            profile=self.profile,
        )
        self.level, self.after_tokens, self.finished = level, after_tokens, True
        return self._event(COMPLETED, **self._files(), outcome=outcome, reason_detail=reason or why, **extra)

    def fail(self, exc: BaseException, **extra: Any) -> None:
        """Emit ``failed`` unless nothing was started or the call already ended; ``extra`` e.g. the
        ``file_path`` of a history section written for a summary that was then not applied."""
        if not self.started or self.finished:
            return
        self.finished = True
        self._emit(
            FAILED,
            **self._files(),
            error=describe_error_for_users(exc),
            error_detail=describe_error(exc),
            failure_kind=failure_kind(exc),
            **extra,
        )

    def stop(self) -> None:
        """The user's Stop ended the call (no model call follows): ``failed`` with ``stopped: true``,
        in words, never an exception's name."""
        if not self.started or self.finished:
            return
        self.finished = True
        if self.writer is not None:
            payload = stopped_event(level=self.level, before_tokens=self.before_tokens, **self._files())
            self.writer({"type": EVENT_TYPE, **payload, "after_tokens": self.after_tokens})

    def _files(self) -> dict[str, Any]:
        return {"saved_files": list(self.saved_files), "failed_files": list(self.failed_files)}

    def _emit(self, status: str, **extra: Any) -> None:
        if self.writer is not None:
            self.writer(self._event(status, **extra))

    def _event(self, status: str, **extra: Any) -> dict[str, Any]:
        payload = compression_event(
            status=status,
            level=self.level,
            before_tokens=self.before_tokens,
            after_tokens=self.after_tokens,
            **extra,
        )
        return {"type": EVENT_TYPE, **payload}
