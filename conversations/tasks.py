"""Celery tasks: ids in, one service call each; and run recovery when a worker starts."""

from __future__ import annotations

import logging

from celery.signals import worker_ready

from conversations.services.dispatch import run_execute_task
from conversations.services.recovery import runs_recover

logger = logging.getLogger(__name__)

__all__ = ["run_execute_task"]  # defined beside its dispatcher; listed here for task discovery


@worker_ready.connect
def recover_runs_on_worker_start(**_kwargs) -> None:
    report = runs_recover()
    logger.info("Run recovery at worker start: %s", report.summary())
