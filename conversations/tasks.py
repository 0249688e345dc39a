"""Celery tasks: ids in, one service call each; and run recovery when a worker starts."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, name="conversations.run_execute")
def run_execute_task(run_id: int) -> None:
    from conversations.services import run_execute

    run_execute(run_id=run_id)


@worker_ready.connect
def recover_runs_on_worker_start(**_kwargs) -> None:
    from conversations.services import runs_recover

    report = runs_recover()
    logger.info("Run recovery at worker start: %s", report.summary())
