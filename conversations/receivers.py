"""A thread's workdir files go when its row goes (admin deletion, or its owner's account deleted).

A receiver rather than a service call because cascades delete rows without calling any service; the
files are removed after the transaction commits, so a rolled-back deletion keeps them. A thread its
owner deletes is only hidden (the admin can restore it): its files stay until the row is deleted.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from agent_platform.workdir import Workdir
from agent_platform.workdir_storage import STORAGE_ERRORS
from conversations.models import Conversation

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
