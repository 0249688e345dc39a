"""Thread maintenance: manual, bulk and admin compression and its undo, under the thread's row lock;
audit records; the pressure figures copied onto the thread.

One transaction holds ``select_for_update`` on the Conversation row from the idle check until the
checkpoint update is done, so a message intake (which takes the same lock) never interleaves with a
compression. The summary model is called while the lock is held: the thread is idle by then and the
lock is what keeps it so.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone

from agent_platform.errors import ApplicationError
from compression.agent_middleware.effects import run_sync
from compression.agent_middleware.events import describe_error
from compression.agent_middleware.state import TOKEN_USAGE_KEY
from compression.agent_middleware.summary import valid_event
from compression.engine.cutoff import is_summary_message
from compression.engine.history import effective_messages
from compression.engine.store import StoreError
from compression.engine.tokens import estimate_message, profile_for_model
from compression.errors import CapabilityMissing, IdempotencyConflict, SummaryFailed
from compression.manual import ManualCompression, force_summarize, messages_tokens, undo_update
from compression.models import CompressionRecord
from conversations.errors import ThreadBusy, ThreadNotFound
from conversations.models import AgentRun, Conversation

CAPABILITY = "context_compression"
# A thread's "compression under way" marker (shared cache), so pages know after a reload or in a
# second tab; it expires by itself should the process die mid-compression.
COMPRESSING_KEY = "compression:under-way:{thread_id}"
COMPRESSING_TTL_SECONDS = 600
# token_usage fields that describe the last model call; after a compression they no longer hold.
STALE_CONTEXT_FIELDS = (
    "llm_input_tokens",
    "llm_message_count",
    "last_call_usage",
    "context_usage_ratio",
    "remaining_context_tokens",
)


@dataclass(frozen=True)
class CompressionOutcome:
    result: dict[str, Any]
    record: CompressionRecord


def thread_compress(
    *, thread_id: uuid.UUID | str, user: AbstractBaseUser, idempotency_key: str | None = None
) -> CompressionOutcome:
    """Compress the caller's idle thread now (the API and the page's button)."""
    from conversations.services import thread_lock

    return _compress(
        lock=partial(thread_lock, thread_id=thread_id, user=user),
        trigger=CompressionRecord.Trigger.MANUAL,
        requested_by=user,
        # A client's keys are its own: another user reusing the same key is a different request.
        idempotency_key=f"user:{user.pk}:{idempotency_key}" if idempotency_key else None,
    )


def conversation_compress(
    *,
    conversation_id: int,
    trigger: str,
    requested_by: AbstractBaseUser | None = None,
    nowait: bool = False,
    idempotency_key: str | None = None,
) -> CompressionOutcome:
    """Compress any thread by id (bulk command, Celery fan-out, admin action); ``nowait`` skips a
    locked thread at once with ``ThreadBusy`` instead of waiting for it."""
    from conversations.services.threads import conversation_lock

    return _compress(
        lock=partial(conversation_lock, conversation_id=conversation_id, nowait=nowait),
        trigger=trigger,
        requested_by=requested_by,
        idempotency_key=idempotency_key,
    )


def thread_compress_undo(*, thread_id: uuid.UUID | str, user: AbstractBaseUser) -> dict[str, Any]:
    """Restore the model-visible history from before the latest summary (same lock and idle rules)."""
    from conversations import events
    from conversations.services import thread_lock

    with thread_lock(thread_id=thread_id, user=user) as conversation:
        _require_idle(conversation)
        repository, agent = _repository(conversation), conversation.agent
        values = repository.get_values()
        profile = profile_for_model(agent.model_name)
        update, before, after = undo_update(values, profile=profile)  # 409 nothing_to_undo
        result = {"status": "undone", "before_tokens": before, "after_tokens": after}
        usage = _refreshed_usage(values, update, conversation=conversation, result=result)
        conversation_pressure_update(conversation_id=conversation.pk, token_usage=usage)
        CompressionRecord.objects.create(
            conversation=conversation,
            requested_by=user,
            trigger=CompressionRecord.Trigger.UNDO,
            status=CompressionRecord.Status.COMPLETED,
            before_tokens=before,
            after_tokens=after,
            cutoff_index=(update["_summarization_event"] or {}).get("cutoff_index"),
            result=result,
            started_at=timezone.now(),
        )
        # Last: the checkpoint is outside the transaction.
        repository.update({**update, TOKEN_USAGE_KEY: usage})
        events.broadcast(conversation.thread_id, events.COMPRESSION, level="undo", **result)  # on commit
        return result


def conversation_pressure_update(*, conversation_id: int, token_usage: Mapping[str, Any] | None) -> None:
    """Copy the latest pressure figures onto the thread, so selecting among many threads never opens
    a checkpoint. Written by runs (after each run) and by every compression."""
    if not token_usage:
        return
    Conversation.objects.filter(pk=conversation_id).update(
        context_tokens=token_usage.get("next_llm_input_tokens"),
        trigger_tokens=token_usage.get("summary_trigger_tokens"),
        pressure_ratio=token_usage.get("summary_pressure_ratio"),
        summary_active=bool(token_usage.get("summary_active")),
        usage_updated_at=timezone.now(),
    )


def compression_record_from_event(*, run: AgentRun, event: Mapping[str, Any]) -> CompressionRecord | None:
    """The audit record of an automatic compression, from its ``completed``/``failed`` run event."""
    status = event.get("status")
    if status not in (CompressionRecord.Status.COMPLETED, CompressionRecord.Status.FAILED):
        return None
    usage = event.get("summary_usage")
    return CompressionRecord.objects.create(
        conversation_id=run.conversation_id,
        run=run,
        trigger=CompressionRecord.Trigger.AUTO,
        level=event.get("level") or CompressionRecord.Level.NONE,
        status=status,
        before_tokens=_count(event.get("before_tokens")),
        after_tokens=_count(event.get("after_tokens")),
        cutoff_index=_count(event.get("cutoff_index")),
        compressed_messages=_count(event.get("compressed_messages")),
        file_path=str(event.get("file_path") or ""),
        saved_files=list(event.get("saved_files") or []),
        summary_usage=dict(usage) if isinstance(usage, Mapping) else {},
        error=str(event.get("error") or ""),
        result=dict(event),
    )


# --- internals -------------------------------------------------------------------------------------


def _compress(
    *,
    lock: Callable[[], AbstractContextManager[Conversation]],
    trigger: str,
    requested_by: AbstractBaseUser | None,
    idempotency_key: str | None,
) -> CompressionOutcome:
    from conversations import events

    started_at = timezone.now()
    announced: list[object] = []  # the thread id, once "started" went out
    locked: list[int] = []  # the conversation, once its row is held
    try:
        with lock() as conversation:
            locked.append(conversation.pk)
            outcome = _compress_locked(
                conversation,
                trigger=trigger,
                requested_by=requested_by,
                idempotency_key=idempotency_key,
                started_at=started_at,
                announce=lambda: announced.append(_announce(conversation, trigger)),
            )
    except SummaryFailed as exc:
        # The locked transaction rolled back (state untouched); the failure is still audited.
        CompressionRecord.objects.create(
            conversation_id=locked[0],
            requested_by=requested_by,
            trigger=trigger,
            level=CompressionRecord.Level.SUMMARY,
            status=CompressionRecord.Status.FAILED,
            error=exc.message,
            started_at=started_at,
        )
        _announce_failure(announced, exc.message)
        raise
    except BaseException as exc:
        _announce_failure(announced, describe_error(exc))
        raise
    finally:
        for thread_id in announced:
            cache.delete(COMPRESSING_KEY.format(thread_id=thread_id))
    if announced:
        record = outcome.record
        events.broadcast(
            announced[0],
            events.COMPRESSION,
            status=record.status,
            level=record.level,
            trigger=trigger,
            **{k: v for k, v in outcome.result.items() if k != "status"},
        )
    return outcome


def _announce(conversation: Conversation, trigger: str) -> object:
    """Mark the thread as compressing and tell its pages now (the lock is held, the work begins)."""
    from conversations import events

    cache.set(COMPRESSING_KEY.format(thread_id=conversation.thread_id), trigger, COMPRESSING_TTL_SECONDS)
    events.broadcast_now(
        conversation.thread_id,
        events.COMPRESSION,
        status="started",
        level="summary",
        before_tokens=None,
        after_tokens=None,
        trigger=trigger,
    )
    return conversation.thread_id


def _announce_failure(announced: list[object], error: str) -> None:
    """``failed`` for a compression whose ``started`` went out (SPEC 6.7: same fields, plus the error)."""
    from conversations import events

    for thread_id in announced:
        events.broadcast(
            thread_id,
            events.COMPRESSION,
            status="failed",
            level="summary",
            before_tokens=None,
            after_tokens=None,
            error=error,
        )


def thread_compressing(*, thread_id: object) -> bool:
    """Whether a manual or bulk compression of this thread is under way (any process)."""
    return cache.get(COMPRESSING_KEY.format(thread_id=thread_id)) is not None


def _compress_locked(
    conversation: Conversation,
    *,
    trigger: str,
    requested_by: AbstractBaseUser | None,
    idempotency_key: str | None,
    started_at: datetime,
    announce: Callable[[], None],
) -> CompressionOutcome:
    if conversation.status != Conversation.Status.ACTIVE:
        raise ThreadNotFound()
    if replay := _replay(conversation, idempotency_key):
        return replay
    agent = conversation.agent
    if not agent.has_capability(CAPABILITY):
        raise CapabilityMissing()
    _require_idle(conversation)
    record = _reserve(conversation, trigger=trigger, requested_by=requested_by, key=idempotency_key)
    announce()

    repository = _repository(conversation)
    values = repository.get_values()
    manual = _run_manual(conversation, values)

    record.level = CompressionRecord.Level.SUMMARY if manual.update else CompressionRecord.Level.NONE
    record.status = manual.status
    record.reason = manual.reason or ""
    record.before_tokens = manual.before_tokens
    record.after_tokens = manual.after_tokens
    record.cutoff_index = manual.cutoff_index
    record.compressed_messages = manual.compressed_messages
    record.file_path = manual.file_path or ""
    record.saved_files = list(manual.saved_files)
    record.summary_usage = manual.summary_usage or {}
    record.result = manual.body()
    record.started_at = started_at
    record.save()
    if manual.update:
        usage = _refreshed_usage(values, manual.update, conversation=conversation, result=manual.body())
        conversation_pressure_update(conversation_id=conversation.pk, token_usage=usage)
        # The checkpoint lives outside this transaction: write it last, so that any failure before it
        # rolls everything back with the state untouched, and only the commit itself can follow it.
        repository.update({**manual.update, TOKEN_USAGE_KEY: {**manual.update[TOKEN_USAGE_KEY], **usage}})
    return CompressionOutcome(record.result, record)


def _run_manual(conversation: Conversation, values: Mapping[str, Any]) -> ManualCompression:
    """The algorithm with the agent's own model; any failure becomes ``SummaryFailed`` (state unchanged)."""
    from agent_platform.runtime.models import chat_model_for
    from agent_platform.workdir import workdir_for

    agent = conversation.agent
    steps = force_summarize(
        values,
        config=agent.compression_config(),
        store=workdir_for(conversation),
        profile=profile_for_model(agent.model_name),
        now=datetime.now(UTC),
    )
    try:
        return run_sync(steps, handler=_no_agent_calls, summary_model=chat_model_for(agent))
    except ApplicationError:
        raise
    except StoreError as exc:
        raise SummaryFailed(
            f"The conversation history could not be saved, so nothing was compressed: {exc}",
        ) from exc
    except Exception as exc:
        raise SummaryFailed(
            f"The summary could not be produced, so nothing was compressed: {describe_error(exc)}",
        ) from exc


def _no_agent_calls(request: Any) -> Any:  # pragma: no cover - the manual algorithm never calls the agent
    raise RuntimeError("Manual compression does not call the agent model.")


def _repository(conversation: Conversation):
    from agent_platform.runtime.graph import state_graph_for
    from compression.state_repository import AgentStateRepository

    return AgentStateRepository(state_graph_for(conversation), conversation.thread_id)


def _require_idle(conversation: Conversation) -> None:
    """409 when a run is running or queued, or the latest run waits on the user; never queued."""
    from conversations.selectors import thread_busy_flags

    flags = thread_busy_flags(conversation=conversation)
    if flags["interrupted"]:
        raise ThreadBusy("The thread is waiting for your answer; answer it before compressing.")
    if flags["busy"]:
        raise ThreadBusy("The thread has a run in progress or queued; try again when it is idle.")


def _replay(conversation: Conversation, key: str | None) -> CompressionOutcome | None:
    if not key:
        return None
    record = CompressionRecord.objects.filter(idempotency_key=key).first()
    if record is None:
        return None
    if record.conversation_id != conversation.pk:
        raise IdempotencyConflict()
    return CompressionOutcome(record.result, record)


def _reserve(
    conversation: Conversation, *, trigger: str, requested_by: AbstractBaseUser | None, key: str | None
) -> CompressionRecord:
    """Claim the Idempotency-Key before any work: a concurrent use on another thread waits on the
    unique index, then conflicts, so a key never compresses two threads."""
    try:
        with transaction.atomic():
            return CompressionRecord.objects.create(
                conversation=conversation,
                requested_by=requested_by,
                trigger=trigger,
                status=CompressionRecord.Status.NO_OP,
                idempotency_key=key or None,
            )
    except IntegrityError as exc:
        raise IdempotencyConflict() from exc


def _refreshed_usage(
    values: Mapping[str, Any],
    update: Mapping[str, Any],
    *,
    conversation: Conversation,
    result: Mapping[str, Any],
) -> dict[str, Any]:
    """``token_usage`` after a compression: last-call fields dropped (``None`` deletes them in the
    merge reducer), the next request re-estimated, the result and ``summary_active`` recorded."""
    agent = conversation.agent
    profile = profile_for_model(agent.model_name)
    previous = dict(values.get(TOKEN_USAGE_KEY) or {})
    event = valid_event(update.get("_summarization_event"))
    visible = effective_messages(list(values.get("messages") or []), event)
    overhead = int(previous.get("system_tokens") or 0) + int(previous.get("tools_tokens") or 0)
    next_tokens = overhead + messages_tokens(visible, profile)
    trigger, window = agent.effective_trigger, agent.resolved_context_window
    summary_active = bool(visible) and is_summary_message(visible[0])
    usage: dict[str, Any] = dict.fromkeys(STALE_CONTEXT_FIELDS)
    usage.update(
        next_llm_input_tokens=next_tokens,
        summary_trigger_tokens=trigger,
        summary_pressure_ratio=round(next_tokens / trigger, 4) if trigger else None,
        context_window=window,
        summary_active=summary_active,
        summary_message_tokens=estimate_message(visible[0], profile) if summary_active else 0,
        compression=dict(result),
        measured_at=timezone.now().isoformat(),
    )
    return usage


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None
