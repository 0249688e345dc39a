"""Recovery: runs that lost their worker are reclaimed (see ``leases``) and their threads restarted.

Reclaimed by the redelivered task of the run itself (``execution.run_perform``), by a recovery timer
in every Celery worker and in-process server (``recovery_timer_start``), and by ``recover_runs``.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from datetime import datetime

from django.db import close_old_connections, connections
from django.utils import timezone

from conversations.models import AgentRun
from conversations.services.db_retry import is_transient
from conversations.services.dispatch import run_dispatch_next
from conversations.services.leases import (
    RENEWALS_PER_LEASE,
    run_is_orphaned,
    run_lease_check_period,
    run_lease_duration,
    run_reclaim,
)
from conversations.signals import recovery_pass

logger = logging.getLogger(__name__)

_timer_lock = threading.Lock()
_timer_pids: set[int] = set()


@dataclass
class RecoveryReport:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    dispatched: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)  # stopped by their user before the worker died

    def summary(self) -> str:
        summary = (
            f"{len(self.requeued)} run(s) re-queued, {len(self.failed)} failed, "
            f"{len(self.dispatched)} queued run(s) started"
        )
        return f"{summary}, {len(self.cancelled)} cancelled" if self.cancelled else summary


def runs_recover(
    *, queued_before: datetime | None = None, dispatch: bool = True, waiting: bool = True
) -> RecoveryReport:
    """Reclaim every orphaned ``running`` run, then start the next queued run of each thread that has
    none running: the reclaimed ones, and (``waiting``) those queued before ``queued_before`` (default:
    one lease ago) whose start was lost with a process. ``dispatch=False`` leaves them queued for a
    server to start.
    """
    now = timezone.now()
    queued_before = queued_before or now - run_lease_duration()
    report = RecoveryReport()
    conversations: set[int] = set()
    for run in AgentRun.objects.filter(status=AgentRun.Status.RUNNING).select_related("conversation"):
        if not run_is_orphaned(run, now=now):
            continue
        outcome = run_reclaim(run=run)
        if outcome is None:
            continue
        {
            AgentRun.Status.FAILED: report.failed,
            AgentRun.Status.CANCELLED: report.cancelled,
        }.get(outcome, report.requeued).append(run.pk)
        conversations.add(run.conversation_id)
    if waiting:
        lost = AgentRun.objects.filter(status=AgentRun.Status.QUEUED, created_at__lt=queued_before)
        conversations.update(lost.values_list("conversation_id", flat=True).distinct())
    if dispatch:
        for conversation_id in sorted(conversations):
            started = run_dispatch_next(conversation_id=conversation_id)
            if started is not None:
                report.dispatched.append(started)
    recovery_pass.send(sender=RecoveryReport, now=now)
    return report


def recovery_timer_start(*, first_pass_now: bool = False) -> bool:
    """Run ``runs_recover`` in a daemon thread of this process every ``run_lease_check_period`` (the
    queued runs whose start was lost: once a lease, since re-sending a start is not free).

    For the processes that execute runs: a Celery worker's main process (which survives the pool
    children it replaces) and the web server when runs execute in-process. Once per process; returns
    whether this call started the timer. ``first_pass_now``: a first pass at once that also starts
    every queued run, however young (a server starting in-process: nothing else will start them).
    """
    with _timer_lock:
        if os.getpid() in _timer_pids:
            return False
        _timer_pids.add(os.getpid())

    name = "run-recovery"
    threading.Thread(
        target=recovery_loop, kwargs={"first_pass_now": first_pass_now}, name=name, daemon=True
    ).start()
    return True


def recovery_loop(*, first_pass_now: bool = False, stop: threading.Event | None = None) -> None:
    """``recovery_timer_start``'s passes, a ``run_lease_check_period`` apart, until ``stop`` is set
    (never, in a server).

    The passes share one database connection for the thread's life: opening one per pass (every 2 s,
    in every worker) was most of an idle worker's CPU, work that grew with wall time, not with runs.
    One that broke is closed by the pass that met it; the next pass opens a fresh one."""
    stop = stop or threading.Event()
    close_old_connections()
    queued_before = timezone.now() if first_pass_now else None
    period = run_lease_check_period()
    if not first_pass_now:
        stop.wait(period)
    passes = 0
    try:
        while not stop.is_set():
            try:
                waiting = passes % RENEWALS_PER_LEASE == 0
                report = runs_recover(queued_before=queued_before, waiting=waiting)
                if report.requeued or report.failed or report.dispatched:
                    logger.info("Run recovery: %s", report.summary())
            except Exception as exc:  # noqa: BLE001 - the next pass tries again, on a fresh connection
                if is_transient(exc):
                    logger.warning("Run recovery lost its database connection (%s); next pass", exc)
                else:
                    logger.exception("Run recovery failed")
                connections.close_all()
            queued_before = None
            passes += 1
            stop.wait(period)
    finally:
        connections.close_all()
