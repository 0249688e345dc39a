"""Stop: cancel a thread's running run (cooperatively) or drop a queued one from its queue."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from agent_platform.observability.metrics import run_observed
from conversations import events, run_signals
from conversations.errors import RunNotActive, RunNotFound
from conversations.models import AgentRun
from conversations.services.threads import thread_lock


def run_cancel(*, thread_id: uuid.UUID | str, user: AbstractBaseUser, run_id: int | None = None) -> AgentRun:
    """Cancel run ``run_id`` of the caller's thread, or with no id the one running now.

    A queued run is cancelled at once (its message stays in the transcript and never reaches the model).
    A running run is asked to stop: its executor sees the request between streamed chunks, keeps what
    was streamed, closes open tool calls in the checkpoint, ends the run ``cancelled`` and starts the
    next queued one. Returns the run as it is after this call (``running`` with a stop requested, or
    ``cancelled``). ``RunNotActive`` when the run has already ended or nothing runs.
    """
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        runs = conversation.runs.all()
        if run_id is None:
            run = runs.filter(status=AgentRun.Status.RUNNING).first()
            if run is None:
                raise RunNotActive()
        else:
            run = runs.filter(pk=run_id).first()
            if run is None:
                raise RunNotFound()
        now = timezone.now()
        if run.status == AgentRun.Status.QUEUED:
            runs.filter(pk=run.pk, status=AgentRun.Status.QUEUED).update(
                status=AgentRun.Status.CANCELLED, finished_at=now
            )
            run.status, run.finished_at = AgentRun.Status.CANCELLED, now
            run_observed(status=run.status, seconds=None)  # it never ran: no duration
            events.broadcast(conversation.thread_id, events.RUN_STATUS, run_id=run.pk, status=run.status)
        elif run.status == AgentRun.Status.RUNNING:
            if run.cancel_requested_at is None:
                runs.filter(pk=run.pk).update(cancel_requested_at=now)
                run.cancel_requested_at = now
            run_pk = run.pk
            transaction.on_commit(lambda: run_signals.cancel_flag_set(run_id=run_pk))
            events.broadcast(
                conversation.thread_id, events.RUN_STATUS, run_id=run.pk, status=run.status, stopping=True
            )
        else:
            raise RunNotActive()
        return run
