"""Receivers of the threads' side of other models' changes.

- A thread's workdir files go when its row goes (admin deletion, or its owner's account deleted). A
  receiver rather than a service call because cascades delete rows without calling any service; the
  files are removed after the transaction commits, so a rolled-back deletion keeps them. A thread its
  owner deletes is only hidden (the admin can restore it): its files stay until the row is deleted.
- An agent whose effective trigger changed (the admin retuned it) has every thread's stored pressure
  recomputed, so every figure on every page follows the new trigger now, not at the next run. A
  receiver because ``agent_platform`` (a lower floor) saves agents and must not call up into threads.
- A logout closes the thread sockets of that session (``events.session_ended``): an open socket must
  not go on delivering a thread's events to a browser that signed out.
"""

from __future__ import annotations

import logging

from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from agent_platform.models import Agent
from agent_platform.workdir import Workdir
from agent_platform.workdir_storage import STORAGE_ERRORS
from conversations.events import session_ended
from conversations.models import Conversation
from conversations.services.pressure import conversation_pressure_retune

logger = logging.getLogger(__name__)


@receiver(post_delete, sender=Conversation, dispatch_uid="conversations.workdir_purge")
def _workdir_purge_on_delete(sender, instance: Conversation, **kwargs) -> None:
    thread_id = str(instance.thread_id)
    transaction.on_commit(lambda: workdir_purge(thread_id=thread_id), using=kwargs.get("using"))


def workdir_purge(*, thread_id: str) -> int:
    """Remove every file of a deleted thread's workdir; a storage error is logged, never raised (the
    row is already gone; README "Many machines" names the bucket lifecycle rule for what is left)."""
    try:
        removed = Workdir(thread_id).delete_all()
    except STORAGE_ERRORS:
        logger.exception("could not remove the workdir of deleted thread %s", thread_id)
        return 0
    logger.info("removed %d workdir files of deleted thread %s", removed, thread_id)
    return removed


@receiver(pre_save, sender=Agent, dispatch_uid="conversations.agent_trigger_before")
def _remember_trigger_before(sender, instance: Agent, raw: bool = False, **kwargs) -> None:
    previous = None if raw or instance.pk is None else Agent.objects.filter(pk=instance.pk).first()
    instance._trigger_before = previous.effective_trigger if previous else None


@receiver(post_save, sender=Agent, dispatch_uid="conversations.agent_pressure_retune")
def _retune_on_trigger_change(sender, instance: Agent, created: bool, raw: bool = False, **kwargs) -> None:
    before = getattr(instance, "_trigger_before", None)
    if not created and not raw and before is not None and instance.effective_trigger != before:
        conversation_pressure_retune(agent=instance)


@receiver(user_logged_out, dispatch_uid="conversations.close_sockets_on_logout")
def _close_sockets_on_logout(sender, request, user, **kwargs) -> None:
    if user is None:
        return
    session_key = request.session.session_key if hasattr(request, "session") else None
    transaction.on_commit(lambda: session_ended(user_id=user.pk, session_key=session_key))
