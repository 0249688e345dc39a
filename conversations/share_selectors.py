"""What the owner sees of a thread's sharing: the users it is shared with and its read-only link (the
"Share" panel and ``GET /api/threads/{id}/shares``). The owner's alone, as sharing is."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from conversations.models import Conversation, ThreadLink, ThreadShare
from conversations.selectors import thread_get_owned


@dataclass(frozen=True)
class Sharing:
    shares: list[ThreadShare]  # oldest first, each with its user
    link: ThreadLink | None


def thread_sharing_of(*, conversation: Conversation) -> Sharing:
    """The sharing of a thread already known to be the caller's (the thread page's own)."""
    shares = (
        ThreadShare.objects.filter(conversation=conversation).select_related("user").order_by("created_at")
    )
    return Sharing(shares=list(shares), link=ThreadLink.objects.filter(conversation=conversation).first())


def thread_sharing(*, thread_id: uuid.UUID | str, user: AbstractBaseUser) -> Sharing:
    """The caller's own thread's sharing, else ``ThreadNotFound``."""
    return thread_sharing_of(conversation=thread_get_owned(thread_id=thread_id, user=user))
