"""Sharing one thread through the API: /api/threads/{id}/shares and /api/threads/{id}/link. The owner's
alone (another's thread is 404, as for every write); the link's page is ``share_views.thread_link_read``."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.urls import reverse
from ninja import Field, Router, Schema, Status

from agent_platform.api_errors import error_responses
from conversations.models import ThreadLink
from conversations.services import sharing
from conversations.share_selectors import thread_sharing

router = Router(tags=["sharing"])


class ShareIn(Schema):
    username: str = Field(..., max_length=150)


class SharedUserOut(Schema):
    id: int
    username: str


class LinkOut(Schema):
    url: str  # absolute: whoever holds it reads the transcript (anonymous too) until it is revoked


class SharingOut(Schema):
    users: list[SharedUserOut]
    link: LinkOut | None


def _caller(request: HttpRequest) -> AbstractBaseUser:
    """The signed-in caller (the API's session auth answered 401 to everyone else first)."""
    if not isinstance(request.user, AbstractBaseUser):  # pragma: no cover - auth answered already
        raise PermissionDenied
    return request.user


def _link_out(request: HttpRequest, link: ThreadLink) -> LinkOut:
    return LinkOut(
        url=request.build_absolute_uri(reverse("conversations:thread-link-read", args=[link.token]))
    )


@router.get("/{thread_id}/shares", response={200: SharingOut, **error_responses(404)})
def thread_shares_get(request: HttpRequest, thread_id: uuid.UUID):
    found = thread_sharing(thread_id=thread_id, user=_caller(request))
    users = [SharedUserOut(id=share.user_id, username=share.user.get_username()) for share in found.shares]
    return SharingOut(users=users, link=_link_out(request, found.link) if found.link else None)


@router.post("/{thread_id}/shares", response={201: SharedUserOut, **error_responses(404, 409, 422)})
def thread_share_add(request: HttpRequest, thread_id: uuid.UUID, payload: ShareIn):
    """Let a user (by username) read the thread; 422 `invalid_input` for an unknown name or your own."""
    share = sharing.thread_share_add(thread_id=thread_id, user=_caller(request), username=payload.username)
    return Status(201, SharedUserOut(id=share.user_id, username=share.user.get_username()))


@router.delete("/{thread_id}/shares/{user_id}", response={204: None, **error_responses(404, 409)})
def thread_share_remove(request: HttpRequest, thread_id: uuid.UUID, user_id: int):
    sharing.thread_share_remove(thread_id=thread_id, user=_caller(request), reader_id=user_id)
    return Status(204, None)


@router.post("/{thread_id}/link", response={201: LinkOut, **error_responses(404, 409)})
def thread_link_create(request: HttpRequest, thread_id: uuid.UUID):
    """The thread's read-only link (made once; asking again returns the same link)."""
    return Status(
        201, _link_out(request, sharing.thread_link_create(thread_id=thread_id, user=_caller(request)))
    )


@router.delete("/{thread_id}/link", response={204: None, **error_responses(404, 409)})
def thread_link_revoke(request: HttpRequest, thread_id: uuid.UUID):
    """Revoke the link: its URL is a 404 from now on (revoking twice is harmless)."""
    sharing.thread_link_revoke(thread_id=thread_id, user=_caller(request))
    return Status(204, None)
