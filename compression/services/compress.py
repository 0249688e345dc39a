"""Manual, bulk and admin compression of one thread, under its row lock.

One transaction holds ``select_for_update`` on the Conversation row from the idle check until the
checkpoint update is done, so a message intake (which takes the same lock) never interleaves with a
compression. The summary model is called while the lock is held: the thread is idle by then and the
lock is what keeps it so.
"""

from __future__ import annotations

import gc
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from agent_platform.calibration.selectors import calibration_for
from agent_platform.errors import ApplicationError
from agent_platform.runtime import models as chat_models
from agent_platform.runtime.graph import state_repository_for
from agent_platform.runtime.public_errors import run_error_public
from agent_platform.workdir import workdir_for
from compression.errors import CapabilityMissing, SummaryFailed
from compression.models import CompressionRecord
from compression.selectors import meter_tokens
from compression.services.preview import preview_check
from compression.services.records import (
    record_complete,
    record_replay,
    record_reserve,
    record_summary_failure,
)
from context_engine.config import COMPRESSION_CAPABILITY
from context_engine.errors import StoreError
from context_engine.events import (
    COMPLETED,
    FAILED,
    LEVEL_SUMMARY,
    STARTED,
    compression_event,
    describe_error,
)
from context_engine.manual.apply import ManualCompression, force_summarize
from context_engine.policy.pressure import refreshed_usage, usage_overhead
from context_engine.state import TOKEN_USAGE_KEY
from context_engine.steps import run_sync
from context_engine.summary.call import ledger_update
from context_engine.tokens.calibration import Calibration
from context_engine.tokens.messages import profile_for_model
from conversations import events
from conversations.errors import ThreadBusy, ThreadNotFound
from conversations.models import Conversation
from conversations.selectors import pinned_message_ids, thread_busy_flags
from conversations.services.pressure import (
    conversation_pressure_update,
    thread_compressing_clear,
    thread_compressing_mark,
)
from conversations.services.threads import conversation_lock, thread_lock

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompressionOutcome:
    result: dict[str, Any]
    record: CompressionRecord


def thread_compress(
    *,
    thread_id: uuid.UUID | str,
    user: AbstractBaseUser,
    idempotency_key: str | None = None,
    preview_id: str | None = None,
) -> CompressionOutcome:
    """Compress the caller's idle thread now (the API and the page's button). With ``preview_id``,
    only if the thread is still as that preview showed it (else ``StalePreview``, nothing folded)."""
    return _compress(
        lock=partial(thread_lock, thread_id=thread_id, user=user),
        trigger=CompressionRecord.Trigger.MANUAL,
        requested_by=user,
        # A client's keys are its own: another user reusing the same key is a different request.
        idempotency_key=f"user:{user.pk}:{idempotency_key}" if idempotency_key else None,
        preview_id=preview_id,
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
    return _compress(
        lock=partial(conversation_lock, conversation_id=conversation_id, nowait=nowait),
        trigger=trigger,
        requested_by=requested_by,
        idempotency_key=idempotency_key,
    )


def require_idle(conversation: Conversation) -> None:
    """409 when a run is running or queued, or the latest run waits on the user; never queued."""
    flags = thread_busy_flags(conversation=conversation)
    if flags["interrupted"]:
        raise ThreadBusy("The thread is waiting for your answer; answer it before compressing.")
    if flags["busy"]:
        raise ThreadBusy("The thread has a run in progress or queued; try again when it is idle.")


@dataclass
class _Notice:
    """What one compression told the thread's pages, so its end is told once and consistently."""

    trigger: str
    conversation_id: int | None = None  # once the row is held
    thread_id: object = None  # once "started" went out

    def start(self, conversation: Conversation) -> None:
        """Mark the thread as compressing and tell its pages now (the lock is held, the work begins)."""
        thread_compressing_mark(thread_id=conversation.thread_id, trigger=self.trigger)
        self.thread_id = conversation.thread_id
        payload = compression_event(status=STARTED, level=LEVEL_SUMMARY, trigger=self.trigger)
        events.broadcast_now(conversation.thread_id, events.COMPRESSION, **payload)

    def fail(self, error: str) -> None:
        """``failed`` for a compression whose ``started`` went out (SPEC 6.7: same fields, plus the error)."""
        if self.thread_id is not None:
            payload = compression_event(status=FAILED, level=LEVEL_SUMMARY, error=error)
            events.broadcast(self.thread_id, events.COMPRESSION, **payload)

    def complete(self, outcome: CompressionOutcome) -> None:
        """``completed`` with the automatic path's fields (SPEC 6.7: cutoff_index, the summary call's
        usage) and its ``outcome`` (in the result); a no-op is a completed compression that changed nothing."""
        if self.thread_id is not None:
            record = outcome.record
            result = {k: v for k, v in outcome.result.items() if k != "status"}
            payload = compression_event(
                status=COMPLETED,
                level=record.level,
                trigger=self.trigger,
                cutoff_index=record.cutoff_index,
                summary_usage=record.summary_usage or None,
                **result,
            )
            events.broadcast(self.thread_id, events.COMPRESSION, **payload)

    def close(self) -> None:
        if self.thread_id is not None:
            thread_compressing_clear(thread_id=self.thread_id)


def _compress(
    *,
    lock: Callable[[], AbstractContextManager[Conversation]],
    trigger: str,
    requested_by: AbstractBaseUser | None,
    idempotency_key: str | None,
    preview_id: str | None = None,
) -> CompressionOutcome:
    started_at = timezone.now()
    notice = _Notice(trigger)
    try:
        with _collector_paused(), lock() as conversation:
            notice.conversation_id = conversation.pk
            outcome = _compress_locked(
                conversation,
                trigger=trigger,
                requested_by=requested_by,
                idempotency_key=idempotency_key,
                started_at=started_at,
                notice=notice,
                preview_id=preview_id,
            )
    except SummaryFailed as exc:
        # The locked transaction rolled back (state untouched); the failure is still audited, the
        # exception kept for the admin and the log (the caller reads plain words).
        detail = describe_error(exc.__cause__ or exc)
        logger.warning("Compression of conversation %s failed: %s", notice.conversation_id, detail)
        record_summary_failure(
            conversation_id=notice.conversation_id,
            trigger=trigger,
            requested_by=requested_by,
            error=exc.message,
            error_detail=detail,
            started_at=started_at,
        )
        notice.fail(exc.message)
        raise
    except BaseException as exc:
        notice.fail(run_error_public(exc))
        raise
    finally:
        notice.close()
    notice.complete(outcome)
    return outcome


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the thread's row is locked: loading a large checkpoint
    allocates enough objects to trigger a full collection of the whole process heap (~90 ms at 1,000
    messages, the p95 tail), and every intake waits for this lock. Reference counting still frees
    memory; the collector runs again after the commit."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _compress_locked(
    conversation: Conversation,
    *,
    trigger: str,
    requested_by: AbstractBaseUser | None,
    idempotency_key: str | None,
    started_at: datetime,
    notice: _Notice,
    preview_id: str | None = None,
) -> CompressionOutcome:
    if conversation.status != Conversation.Status.ACTIVE:
        raise ThreadNotFound()
    if replay := record_replay(conversation=conversation, key=idempotency_key):
        return CompressionOutcome(replay.result, replay)
    agent = conversation.agent
    if not agent.has_capability(COMPRESSION_CAPABILITY):
        raise CapabilityMissing()
    repository = state_repository_for(conversation)
    values = repository.get_values()
    if preview_id is not None:
        preview_check(conversation, values, preview_id=preview_id)  # before the busy rule: it says more
    require_idle(conversation)
    record = record_reserve(
        conversation=conversation, trigger=trigger, requested_by=requested_by, key=idempotency_key
    )
    notice.start(conversation)

    calibration = calibration_for(agent=agent)
    spent: list[int] = []  # the summary calls made: a provider bills them even when they fail
    try:
        manual = _run_forced(conversation, values, calibration, spent=spent)
    except SummaryFailed:
        if spent:  # only the spend guard's ledger changes; the checkpoint is outside the transaction
            repository.update(ledger_update(values, spent, now=datetime.now(UTC)))
        raise
    record_complete(record=record, manual=manual, started_at=started_at)
    if manual.update:
        usage = refreshed_usage(
            values,
            manual.update,
            profile=profile_for_model(agent.resolved_model_name),
            trigger_tokens=agent.effective_trigger,
            context_window=agent.resolved_context_window,
            result=manual.body(),
            now=timezone.now(),
            calibration=calibration,
        )
        conversation_pressure_update(conversation_id=conversation.pk, token_usage=usage)
        # The checkpoint lives outside this transaction: write it last, so that any failure before it
        # rolls everything back with the state untouched, and only the commit itself can follow it.
        repository.update(
            {**manual.update, TOKEN_USAGE_KEY: {**manual.update.get(TOKEN_USAGE_KEY, {}), **usage}}
        )
    return CompressionOutcome(record.result, record)


def _run_forced(
    conversation: Conversation, values: dict[str, Any], calibration: Calibration, *, spent: list[int]
) -> ManualCompression:
    """The algorithm with the agent's own model; any failure becomes ``SummaryFailed`` (state unchanged)."""
    agent = conversation.agent
    steps = force_summarize(
        values,
        config=agent.compression_config(),
        store=workdir_for(conversation),
        profile=profile_for_model(agent.resolved_model_name),
        now=datetime.now(UTC),
        calibration=calibration,
        pinned_ids=pinned_message_ids(conversation=conversation),
        overhead_tokens=usage_overhead(
            values.get(TOKEN_USAGE_KEY), profile_for_model(agent.resolved_model_name)
        ),
        before_tokens=meter_tokens(agent=agent, values=values),
        spent=spent,
    )
    try:
        # Looked up on the module at call time, so a test's stand-in model is the one used.
        return run_sync(steps, handler=_no_agent_calls, summary_model=chat_models.chat_model_for(agent))
    except ApplicationError:
        raise
    except StoreError as exc:
        raise SummaryFailed(
            "The conversation history could not be saved, so nothing was compressed."
        ) from exc
    except Exception as exc:
        raise SummaryFailed(
            f"The summary could not be produced, so nothing was compressed: {run_error_public(exc)}",
        ) from exc


def _no_agent_calls(request: Any) -> Any:  # pragma: no cover - the manual algorithm never calls the agent
    raise RuntimeError("Manual compression does not call the agent model.")
