"""Recovering runs orphaned by a crashed worker: re-queued once, failed the second time."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from conversations import events
from conversations.models import AgentRun
from conversations.services.dispatch import run_dispatch_next

# A running run that showed no progress for this long has lost its worker (runs heartbeat every 15 s;
# one model call may take MODEL_REQUEST_TIMEOUT times its retries).
DEFAULT_STALE_AFTER = timedelta(minutes=15)
MAX_ATTEMPTS = 2
ORPHAN_ERROR = "The worker executing this run stopped twice; the run was given up."


@dataclass
class RecoveryReport:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)

    def summary(self) -> str:
        return f"{len(self.requeued)} run(s) re-queued, {len(self.failed)} failed"


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


def _is_orphan(run: AgentRun, *, cutoff, host: str) -> bool:
    last_sign = run.heartbeat_at or run.started_at
    return (last_sign is None or last_sign < cutoff) or _worker_gone(run.worker, host)


def runs_recover(*, stale_after: timedelta | None = None) -> RecoveryReport:
    """Re-queue ``running`` runs whose worker is gone (this host's dead processes, or no heartbeat for
    ``stale_after``); a run already claimed twice is failed instead. Then restarts those threads' queues.
    """
    stale_after = stale_after or getattr(settings, "RUN_STALE_AFTER", DEFAULT_STALE_AFTER)
    cutoff = timezone.now() - stale_after
    host = socket.gethostname()
    report = RecoveryReport()
    conversations: set[int] = set()
    candidates = AgentRun.objects.filter(status=AgentRun.Status.RUNNING).select_related("conversation")
    for run in candidates:
        if not _is_orphan(run, cutoff=cutoff, host=host):
            continue
        with transaction.atomic():
            running = AgentRun.objects.filter(pk=run.pk, status=AgentRun.Status.RUNNING)
            if run.attempts >= MAX_ATTEMPTS:
                if running.update(
                    status=AgentRun.Status.FAILED, error=ORPHAN_ERROR, finished_at=timezone.now()
                ):
                    report.failed.append(run.pk)
                    events.broadcast(
                        run.conversation.thread_id,
                        events.RUN_STATUS,
                        run_id=run.pk,
                        status=AgentRun.Status.FAILED,
                        error=ORPHAN_ERROR,
                    )
            elif running.update(status=AgentRun.Status.QUEUED, started_at=None, heartbeat_at=None, worker=""):
                report.requeued.append(run.pk)
                events.broadcast(
                    run.conversation.thread_id,
                    events.RUN_STATUS,
                    run_id=run.pk,
                    status=AgentRun.Status.QUEUED,
                )
        conversations.add(run.conversation_id)
    for conversation_id in sorted(conversations):
        run_dispatch_next(conversation_id=conversation_id)
    return report
