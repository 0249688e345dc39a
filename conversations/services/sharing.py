"""Sharing one thread read-only: with named users, and through one revocable link. The owner's alone
(``thread_lock`` finds only the caller's own thread); what a share lets its reader see is decided in
``conversations.access``, beside the ``view_conversation`` permission.
"""

from __future__ import annotations

import secrets
import uuid

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.utils.translation import gettext as _

from conversations.errors import InvalidInput
from conversations.models import ThreadLink, ThreadShare
from conversations.services.threads import thread_lock

LINK_TOKEN_BYTES = 32  # 256 bits from ``secrets``: the link cannot be guessed


def thread_share_add(*, thread_id: uuid.UUID | str, user: AbstractBaseUser, username: str) -> ThreadShare:
    """Let the active user named ``username`` read the thread; sharing twice keeps the first share.
    ``InvalidInput`` (422) for a name that is empty, unknown, inactive, or the owner's own."""
    username = username.strip()
    # The thread first: to anyone but its owner it does not exist, so no name is looked up for them.
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        reader = (
            get_user_model().objects.filter(username=username, is_active=True).first() if username else None
        )
        if reader is None:
            raise InvalidInput(_("There is no user named “%(name)s”.") % {"name": username[:150]})
        if reader.pk == user.pk:
            raise InvalidInput(_("This is your own thread; share it with someone else."))
        share, _created = ThreadShare.objects.get_or_create(conversation=conversation, user=reader)
        return share


def thread_share_remove(*, thread_id: uuid.UUID | str, user: AbstractBaseUser, reader_id: int) -> bool:
    """Stop sharing the thread with one user; whether a share was removed (removing twice is harmless)."""
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        removed, _by_model = ThreadShare.objects.filter(conversation=conversation, user_id=reader_id).delete()
        return removed > 0


def thread_link_create(*, thread_id: uuid.UUID | str, user: AbstractBaseUser) -> ThreadLink:
    """The thread's read-only link, made on first call (a second call returns the same link)."""
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        link, _created = ThreadLink.objects.get_or_create(
            conversation=conversation, defaults={"token": secrets.token_urlsafe(LINK_TOKEN_BYTES)}
        )
        return link


def thread_link_revoke(*, thread_id: uuid.UUID | str, user: AbstractBaseUser) -> bool:
    """Revoke the link: its URL names nothing from now on. Whether there was one."""
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        removed, _by_model = ThreadLink.objects.filter(conversation=conversation).delete()
        return removed > 0
