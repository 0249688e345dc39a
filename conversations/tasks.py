"""Celery tasks: ids in, one service call each; and, in every worker, run recovery and the run modules' preload."""

from __future__ import annotations

import logging

from celery.signals import worker_init, worker_ready
from django.conf import settings

from agent_platform.runtime.preload import run_modules_preload
from conversations.services.dispatch import run_execute_task
from conversations.services.recovery import recovery_timer_start, runs_recover

logger = logging.getLogger(__name__)

__all__ = ["run_execute_task"]  # defined beside its dispatcher; listed here for task discovery


@worker_init.connect
def preload_run_modules(**_kwargs) -> None:
    """In the worker's main process, before it forks its pool: each child starts with them loaded."""
    run_modules_preload()


@worker_ready.connect
def recover_runs_on_worker_start(**_kwargs) -> None:
    """Recover at once what crashed workers left, then keep reclaiming expired leases every sixth of a lease
    (the worker's main process survives the pool children it replaces)."""
    report = runs_recover()
    logger.info("Run recovery at worker start: %s", report.summary())
    if settings.RUN_RECOVERY_TIMER:
        recovery_timer_start()
