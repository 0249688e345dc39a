"""The forced compression as the jobs run it: the idle rule, the notices a thread's pages get, and the
engine's algorithm with the agent's own model (``run_forced``). No lock is taken here."""

from __future__ import annotations

import errno
import gc
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agent_platform.errors import ApplicationError
from agent_platform.runtime import models as chat_models
from agent_platform.runtime.public_errors import run_error_public
from agent_platform.workdir import workdir_for
from compression.errors import TRANSIENT_MODEL_ERRORS, ModelUnavailable, StorageFull, SummaryFailed
from compression.models import CompressionRecord
from compression.selectors import meter_tokens
from context_engine.errors import Stopped, StoreError
from context_engine.events import (
    COMPLETED,
    FAILED,
    LEVEL_SUMMARY,
    STARTED,
    compression_event,
)
from context_engine.manual.apply import ManualCompression, Reading, force_summarize, forced_no_op
from context_engine.policy.pressure import usage_overhead
from context_engine.state import TOKEN_USAGE_KEY
from context_engine.steps import run_sync
from context_engine.tokens.calibration import Calibration
from conversations import events
from conversations.errors import ThreadBusy
from conversations.models import Conversation
from conversations.selectors import pinned_message_ids, thread_busy_flags
from conversations.services.pressure import thread_compressing_clear, thread_compressing_mark

logger = logging.getLogger(__name__)


def require_idle(conversation: Conversation) -> None:
    """409 when a run is running or queued, or the latest run waits on the user; never queued."""
    flags = thread_busy_flags(conversation=conversation)
    if flags["interrupted"]:
        raise ThreadBusy("The thread is waiting for your answer; answer it before compressing.")
    if flags["maintenance"]:
        raise ThreadBusy("The thread's context is already being compressed; wait for that to end.")
    if flags["busy"]:
        raise ThreadBusy("The thread has a run in progress or queued; try again when it is idle.")


@dataclass
class Notice:
    """What one compression told the thread's pages, so its end is told once and consistently."""

    trigger: str
    job_id: int | None = None
    thread_id: object = None  # once "started" went out

    def start(self, conversation: Conversation) -> None:
        """Mark the thread as compressing and tell its pages now (the job holds the thread, the work begins)."""
        thread_compressing_mark(thread_id=conversation.thread_id, trigger=self.trigger)
        self.thread_id = conversation.thread_id
        payload = compression_event(
            status=STARTED, level=LEVEL_SUMMARY, trigger=self.trigger, job_id=self.job_id
        )
        events.broadcast_now(conversation.thread_id, events.COMPRESSION, **payload)

    def at_once(self, conversation: Conversation, record: CompressionRecord) -> None:
        """``started`` and ``completed`` together, on commit, for a compression decided without holding
        the thread (nothing to fold): no "compressing" mark, the pages get the same pair of events."""
        self.thread_id = conversation.thread_id
        payload = compression_event(
            status=STARTED, level=LEVEL_SUMMARY, trigger=self.trigger, job_id=self.job_id
        )
        events.broadcast(conversation.thread_id, events.COMPRESSION, **payload)
        self.complete(record)
        self.thread_id = None  # nothing to clear (``close``): the thread was never marked

    def fail(self, error: str) -> None:
        """``failed`` for a compression whose ``started`` went out (SPEC 6.7: same fields, plus the error)."""
        if self.thread_id is not None:
            payload = compression_event(status=FAILED, level=LEVEL_SUMMARY, error=error, job_id=self.job_id)
            events.broadcast(self.thread_id, events.COMPRESSION, **payload)

    def complete(self, record: CompressionRecord) -> None:
        """``completed`` with the automatic path's fields (SPEC 6.7: cutoff_index, the summary call's
        usage) and its ``outcome`` (in the result); a no-op is a completed compression that changed nothing."""
        if self.thread_id is not None:
            result = {k: v for k, v in record.result.items() if k != "status"}
            payload = compression_event(
                status=COMPLETED,
                level=record.level,
                trigger=self.trigger,
                cutoff_index=record.cutoff_index,
                summary_usage=record.summary_usage or None,
                job_id=self.job_id,
                **result,
            )
            events.broadcast(self.thread_id, events.COMPRESSION, **payload)

    def close(self) -> None:
        if self.thread_id is not None:
            thread_compressing_clear(thread_id=self.thread_id)


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the thread's row is locked (the apply): loading a large checkpoint
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


def _reading(conversation: Conversation, values: dict[str, Any], calibration: Calibration) -> Reading:
    agent = conversation.agent
    return Reading(
        pinned_ids=pinned_message_ids(conversation=conversation),
        calibration=calibration,
        overhead_tokens=usage_overhead(values.get(TOKEN_USAGE_KEY), agent.compression_config().profile),
        before_tokens=meter_tokens(agent=agent, values=values),
    )


def forced_nothing_to_do(
    conversation: Conversation, values: dict[str, Any], calibration: Calibration
) -> ManualCompression | None:
    """The ``no_op`` a forced compression of ``values`` would end in (nothing to fold, or the spend
    guard holds it back), from the stored estimates: no model call, nothing written. ``None``: it would
    summarize (or the plan itself failed: the job reports that)."""
    config = conversation.agent.compression_config()
    try:
        return forced_no_op(
            values,
            config=config,
            store=workdir_for(conversation),
            profile=config.profile,
            now=datetime.now(UTC),
            reading=_reading(conversation, values, calibration),
        )
    except Exception:  # noqa: BLE001 - only a shortcut: the job decides again and reports any failure
        logger.warning(
            "Could not decide early whether thread %s has anything to fold", conversation.pk, exc_info=True
        )
        return None


def _disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` came of a full disk or quota (ENOSPC, EDQUOT), however wrapped."""
    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        current = current.__cause__ or current.__context__
    return False


def run_forced(
    conversation: Conversation,
    values: dict[str, Any],
    calibration: Calibration,
    *,
    spent: list[int],
    stop: Callable[[], bool] | None = None,
) -> ManualCompression:
    """The algorithm with the agent's own model: the update to apply, nothing applied. Any failure
    becomes ``SummaryFailed``; ``stop`` (asked between steps and during the summary call) ends it with
    ``Stopped``."""
    agent = conversation.agent
    config = agent.compression_config()
    reading = _reading(conversation, values, calibration)
    steps = force_summarize(
        values,
        config=config,
        store=workdir_for(conversation),
        profile=config.profile,
        now=datetime.now(UTC),
        reading=reading,
        spent=spent,
    )
    try:
        # Looked up on the module at call time, so a test's stand-in model is the one used.
        return run_sync(
            steps, handler=_no_agent_calls, summary_model=chat_models.chat_model_for(agent), stop=stop
        )
    except (ApplicationError, Stopped):
        raise
    except StoreError as exc:
        if _disk_full(exc):  # said as what it is: no file was written, the disk has no room
            raise StorageFull() from exc
        raise SummaryFailed(
            "The conversation history could not be saved, so nothing was compressed."
        ) from exc
    except TRANSIENT_MODEL_ERRORS as exc:
        raise ModelUnavailable(
            f"The summary could not be produced, so nothing was compressed: {run_error_public(exc)}",
        ) from exc
    except Exception as exc:
        if _disk_full(exc):
            raise StorageFull() from exc
        raise SummaryFailed(
            f"The summary could not be produced, so nothing was compressed: {run_error_public(exc)}",
        ) from exc


def _no_agent_calls(request: Any) -> Any:  # pragma: no cover - the manual algorithm never calls the agent
    raise RuntimeError("Manual compression does not call the agent model.")
