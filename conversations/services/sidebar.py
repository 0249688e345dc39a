"""The sidebar's marks on a thread, its owner's alone: pin, archive, and restore from the bin.

Pinning and archiving take the thread's row lock like every other write; a restore finds the thread
only while it is in the owner's bin (deleted within ``THREAD_BIN_RETENTION_DAYS``), else it answers
``ThreadNotFound`` as for any thread the caller cannot see.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from conversations.errors import ThreadNotFound
from conversations.models import Conversation
from conversations.selectors import threads_in_bin
from conversations.services.threads import thread_lock


def thread_pin_set(*, thread_id: uuid.UUID | str, user: AbstractBaseUser, pinned: bool) -> Conversation:
    """Pin the thread at the top of its owner's sidebar, or unpin it (pinning twice keeps the first time)."""
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        if pinned != (conversation.pinned_at is not None):
            conversation.pinned_at = timezone.now() if pinned else None
            conversation.save(update_fields=["pinned_at", "updated_at"])
        return conversation


def thread_archive_set(*, thread_id: uuid.UUID | str, user: AbstractBaseUser, archived: bool) -> Conversation:
    """Take the thread out of the sidebar and the list (it stays readable and searchable under
    "Archived"), or bring it back."""
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        if archived != (conversation.archived_at is not None):
            conversation.archived_at = timezone.now() if archived else None
            conversation.save(update_fields=["archived_at", "updated_at"])
        return conversation


def thread_restore(*, thread_id: uuid.UUID | str, user: AbstractBaseUser) -> Conversation:
    """Bring a thread back from the caller's bin, as it was; ``ThreadNotFound`` once it has left it."""
    with transaction.atomic():
        try:
            conversation = threads_in_bin(user=user).select_for_update().get(thread_id=thread_id)
        except (Conversation.DoesNotExist, ValueError) as exc:
            raise ThreadNotFound() from exc
        conversation.status, conversation.deleted_at = Conversation.Status.ACTIVE, None
        conversation.save(update_fields=["status", "deleted_at", "updated_at"])
        return conversation
