"""Run leases: a ``running`` run is held by one worker while that worker renews its lease.

The same machinery holds any row with ``status``, ``worker`` and ``heartbeat_at`` (``lease_renewed``,
``holder_lost``): compression jobs are leased and reclaimed the same way.

The executor renews ``heartbeat_at`` a sixth of ``RUN_LEASE_SECONDS`` after its latest renewal while
the run executes (``run_lease``), and with every transcript write (``execution``: under the same transaction,
which also refuses the write once the run is no longer its own). A run whose worker was a process of
this host that no longer exists, or whose remote worker's lease ran out, has lost its worker
(``run_is_orphaned``) and may be taken back (``run_reclaim``): re-queued if it was claimed once, failed
after that. A live process of this host is not judged by its renewals' timing, which CPU starvation
delays: only once silent for ``RUN_LEASE_STUCK_SECONDS``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections, transaction
from django.db.models import QuerySet
from django.utils import timezone

from agent_platform.observability.metrics import lease_reclaim_observed, run_observed
from conversations import events
from conversations.models import AgentRun
from conversations.services.closing import compression_left_open
from conversations.services.threads import failure_notice_append
from conversations.signals import run_compression_event

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 2
ORPHAN_ERROR = "The worker executing this run stopped twice; the run was given up."


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# Renewals per lease: a holder misses five in a row (a stalled database, a starved thread) before it
# loses the run; recovery looks as often, so a dead worker's run is back in a lease and a sixth.
RENEWALS_PER_LEASE = 6


def run_lease_duration() -> timedelta:
    return timedelta(seconds=settings.RUN_LEASE_SECONDS)


def run_lease_check_period() -> float:
    """Seconds between two renewals of a lease, and between two recovery passes."""
    return max(0.2, settings.RUN_LEASE_SECONDS / RENEWALS_PER_LEASE)


class Lease(threading.Event):
    """A held lease: set once it is lost (another holder took the rows back). ``renewed`` records a
    renewal the holder made itself (a transcript write renews in its own transaction): the renewer's
    next renewal is due a period after the latest one, whoever made it, so a run that writes often
    is not renewed a second time in between."""

    def __init__(self) -> None:
        super().__init__()
        self.renewed_at = time.monotonic()

    def renewed(self) -> None:
        self.renewed_at = time.monotonic()


@contextmanager
def run_lease(*, run_id: int, worker: str) -> Iterator[Lease]:
    """Renew the run's lease from a background thread while the block executes; yields the ``Lease``,
    set once it is lost (the executor's stop checks read it: a tool call ends, ``stopping``).

    Renewal is conditional on the run still being ``running`` under ``worker``: once recovery gave the
    run to someone else, this holder stops renewing it (and ``_finish`` refuses its outcome).
    """
    with lease_renewed(
        held=lambda: AgentRun.objects.filter(pk=run_id, status=AgentRun.Status.RUNNING, worker=worker),
        name=f"run-{run_id}-lease",
    ) as lease:
        yield lease


@contextmanager
def lease_renewed(*, held: Callable[[], QuerySet], name: str) -> Iterator[Lease]:
    """Set ``heartbeat_at`` on the rows ``held()`` selects a sixth of ``RUN_LEASE_SECONDS`` after the
    latest renewal (this thread's, or one the holder recorded with ``Lease.renewed``) while the block
    executes: a deadline, never a busy loop, so the work does not grow with the block's wall time
    beyond one UPDATE a period. Stops once the rows are no longer held (another holder took them
    back), and sets the ``Lease`` it yields then."""
    stop, lease = threading.Event(), Lease()
    every = run_lease_check_period()

    def renew() -> None:
        tried_at = lease.renewed_at  # the claim renewed it
        try:
            while not stop.wait(max(0.0, max(lease.renewed_at, tried_at) + every - time.monotonic())):
                if lease.renewed_at + every > time.monotonic():
                    continue  # the holder renewed it meanwhile: due a period after that
                tried_at = time.monotonic()
                try:
                    if not held().update(heartbeat_at=timezone.now()):
                        lease.set()
                        return
                    lease.renewed()
                except Exception:  # noqa: BLE001 - a lost connection: the next renewal opens a fresh one
                    logger.warning("Renewing the lease %s failed; trying again", name, exc_info=True)
                    connections.close_all()
        finally:
            connections.close_all()

    renewer = threading.Thread(target=renew, name=name, daemon=True)
    renewer.start()
    try:
        yield lease
    finally:
        stop.set()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _worker_gone(worker: str, host: str) -> bool:
    """Whether ``worker`` (``host:pid``) was a process on this host that no longer exists."""
    worker_host, _sep, pid = worker.rpartition(":")
    if worker_host != host or not pid.isdigit():
        return False
    return int(pid) != os.getpid() and not _pid_alive(int(pid))


def run_is_orphaned(run: AgentRun, *, now: datetime | None = None) -> bool:
    """Whether a ``running`` run lost its worker: lease ran out, or its local process is gone."""
    if run.status != AgentRun.Status.RUNNING:
        return False
    return holder_lost(heartbeat_at=run.heartbeat_at, started_at=run.started_at, worker=run.worker, now=now)


def holder_lost(
    *, heartbeat_at: datetime | None, started_at: datetime | None, worker: str, now: datetime | None = None
) -> bool:
    """Whether the holder of a lease is gone. A process of this machine is asked directly: gone once its
    pid is, and a live one (a starved process renews late, but it still works) only once silent for
    ``RUN_LEASE_STUCK_SECONDS`` (stuck); a holder elsewhere, once its last sign is a lease old."""
    now = now or timezone.now()
    last_sign = heartbeat_at or started_at
    silent = None if last_sign is None else now - last_sign
    host = socket.gethostname()
    if _on_host(worker, host):
        return _worker_gone(worker, host) or silent is None or silent > run_stuck_duration()
    return silent is None or silent > run_lease_duration()


def run_stuck_duration() -> timedelta:
    return timedelta(seconds=max(settings.RUN_LEASE_STUCK_SECONDS, settings.RUN_LEASE_SECONDS))


def _on_host(worker: str, host: str) -> bool:
    worker_host, _sep, pid = worker.rpartition(":")
    return worker_host == host and pid.isdigit()


def run_reclaim(*, run: AgentRun) -> str | None:
    """Take a lost run back from its worker: ``"cancelled"`` if its user had stopped it (never started
    again), else re-queued (``"queued"``) if it was claimed once, failed (``"failed"``) after that.
    ``None`` when the run was no longer ``running`` as read. A compression the lost worker had started
    and not ended is closed as ``failed`` (reason ``worker_lost``), so no event stays open."""
    outcome = _reclaim(run)
    if outcome is not None:
        lease_reclaim_observed(outcome=outcome)
        _close_open_compression(run)
    if outcome in (AgentRun.Status.FAILED, AgentRun.Status.CANCELLED):  # the run ended here
        run_observed(status=outcome, seconds=None)
    return outcome


def _close_open_compression(run: AgentRun) -> None:
    closing = compression_left_open(run.events or [])
    if closing is None:
        return
    run.events = [*(run.events or []), {"type": events.COMPRESSION, **closing}]
    AgentRun.objects.filter(pk=run.pk).update(events=run.events)
    run_compression_event.send(sender=AgentRun, run=run, event=closing)  # its audit record
    events.broadcast(run.conversation.thread_id, events.COMPRESSION, **closing)


def _reclaim(run: AgentRun) -> str | None:
    with transaction.atomic():
        # Compare-and-swap on the holder and its last renewal: a lease renewed meanwhile is kept.
        held = AgentRun.objects.filter(
            pk=run.pk, status=AgentRun.Status.RUNNING, worker=run.worker, heartbeat_at=run.heartbeat_at
        )
        if run.cancel_requested_at is not None:
            if not held.update(status=AgentRun.Status.CANCELLED, finished_at=timezone.now()):
                return None
            events.broadcast(
                run.conversation.thread_id, events.RUN_STATUS, run_id=run.pk, status=AgentRun.Status.CANCELLED
            )
            return AgentRun.Status.CANCELLED
        if run.attempts >= MAX_ATTEMPTS:
            if not held.update(status=AgentRun.Status.FAILED, error=ORPHAN_ERROR, finished_at=timezone.now()):
                return None
            failure_notice_append(run=run, error=ORPHAN_ERROR)
            events.broadcast(
                run.conversation.thread_id,
                events.RUN_STATUS,
                run_id=run.pk,
                status=AgentRun.Status.FAILED,
                error=ORPHAN_ERROR,
            )
            return AgentRun.Status.FAILED
        if not held.update(status=AgentRun.Status.QUEUED, started_at=None, heartbeat_at=None, worker=""):
            return None
        events.broadcast(
            run.conversation.thread_id, events.RUN_STATUS, run_id=run.pk, status=AgentRun.Status.QUEUED
        )
        return AgentRun.Status.QUEUED
