"""Who may see a thread: the one access rule of the API, the pages, the fragments, the files view, the
thread socket and /admin/pressure/.

A thread is visible to its owner, to the users its owner shared it with (``ThreadShare``), and to
holders of ``conversations.view_conversation`` (superusers hold every permission); ``is_staff`` alone
grants nothing. The thread's read-only link (``ThreadLink``) opens its transcript alone, at
``thread_by_link``: a link holder gets no page, fragment, file or socket of the thread. Writes (messages, answers, deletion, compression)
stay the owner's alone: ``conversations.services.thread_lock`` locks only the caller's own thread.
"""

from __future__ import annotations

import uuid
from importlib import import_module
from types import SimpleNamespace

from django.conf import settings
from django.contrib.auth import get_user, get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from conversations.models import Conversation, ThreadShare

VIEW_PERMISSION = "conversations.view_conversation"


def threads_visible_to(user: AbstractBaseUser | AnonymousUser | None) -> QuerySet[Conversation]:
    """The active threads ``user`` may see (none for anonymous or inactive users)."""
    active = Conversation.objects.filter(status=Conversation.Status.ACTIVE)
    if user is None or not user.is_authenticated or not user.is_active:
        return active.none()
    if user.has_perm(VIEW_PERMISSION):
        return active
    shared = ThreadShare.objects.filter(user=user).values("conversation_id")
    return active.filter(Q(owner=user) | Q(pk__in=shared))


def thread_by_link(*, token: str) -> Conversation | None:
    """The active thread whose read-only link carries ``token``; None once the link is revoked (or
    the thread deleted)."""
    if not token:
        return None
    return (
        Conversation.objects.filter(status=Conversation.Status.ACTIVE, link__token=token)
        .select_related("agent", "owner")
        .first()
    )


def thread_visible(*, thread_id: uuid.UUID | str, user: AbstractBaseUser | AnonymousUser | None) -> bool:
    """Whether ``user`` may see the thread; a ``thread_id`` that is not a UUID names no thread."""
    try:
        thread_id = uuid.UUID(str(thread_id))
    except ValueError:
        return False
    return threads_visible_to(user).filter(thread_id=thread_id).exists()


def can_act(conversation: Conversation, user: AbstractBaseUser | AnonymousUser | None) -> bool:
    """Whether ``user`` may write to the thread (send, answer, stop, rename, delete, pin, compress,
    undo): its owner only. The pages show those controls to the owner alone; a viewer reads."""
    return bool(user is not None and user.is_authenticated and conversation.owner_id == user.pk)


def thread_visible_now(*, thread_id: uuid.UUID, user_id: object, session_key: str | None) -> bool:
    """Whether an open socket may still see the thread, read afresh (nothing the socket cached at
    connect counts): its session still exists and still authenticates the same active user (a logout,
    an expired session, a password change or a deactivation end it), and that user, with their
    permissions as they are now, may see the thread. A socket with no session (a test scope, a
    socket authenticated otherwise) is judged by its user's row alone."""
    if session_key is not None:
        session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
        user = get_user(SimpleNamespace(session=session))
        if not user.is_authenticated or user.pk != user_id:
            return False
    else:
        user = get_user_model().objects.filter(pk=user_id).first()
    return thread_visible(thread_id=thread_id, user=user)
