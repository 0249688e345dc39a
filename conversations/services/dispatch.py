"""Starting runs: one at a time per thread, oldest first, on Celery, a thread, or inline (tests).

The Celery task lives here, beside the dispatcher that sends it, so executing a run and starting the
next one never import each other; ``conversations.tasks`` re-exports it for task discovery.
"""

from __future__ import annotations

import logging
import threading

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, connections
from kombu.exceptions import OperationalError as KombuOperationalError

from conversations.models import AgentRun
from conversations.selectors import run_queue_head
from conversations.services.execution import run_perform

logger = logging.getLogger(__name__)

EXECUTION_MODES = ("celery", "inprocess", "eager")


def run_dispatch_next(*, conversation_id: int) -> int | None:
    """Start the thread's oldest queued run unless one is running; returns the dispatched run id.

    Call outside a transaction (on commit). Starting the same run twice is harmless: only one claim wins.
    A start the broker refused leaves the run queued: a worker's recovery pass starts it within a lease.
    """
    run = run_queue_head(conversation_id=conversation_id)
    if run is None or run.status == AgentRun.Status.RUNNING:
        return None
    run_start(run_id=run.pk)
    return run.pk


def run_execute(*, run_id: int) -> None:
    """Execute a queued run to its end, then start the thread's next one. Idempotent through status."""
    conversation_id = run_perform(run_id=run_id)
    if conversation_id is not None:
        run_dispatch_next(conversation_id=conversation_id)


@shared_task(acks_late=True, name="conversations.run_execute")
def run_execute_task(run_id: int) -> None:
    run_execute(run_id=run_id)


def run_start(*, run_id: int) -> None:
    mode = settings.RUN_EXECUTION
    if mode == "celery":
        try:
            run_execute_task.delay(run_id)
        except (KombuOperationalError, OSError):  # the broker (Redis) is down: the run stays queued
            logger.warning("Could not send run %s to the workers; recovery starts it later", run_id)
    elif mode == "inprocess":
        threading.Thread(target=_execute_in_thread, args=(run_id,), name=f"run-{run_id}", daemon=True).start()
    elif mode == "eager":
        run_execute(run_id=run_id)
    else:
        raise ValueError(f"RUN_EXECUTION must be one of {EXECUTION_MODES}, not {mode!r}")


def _execute_in_thread(run_id: int) -> None:
    close_old_connections()
    try:
        run_execute(run_id=run_id)
    except Exception:  # noqa: BLE001 - a thread has no caller to report to
        logger.exception("Run %s failed outside its own error handling", run_id)
    finally:
        connections.close_all()
