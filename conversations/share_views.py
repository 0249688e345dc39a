"""Sharing one thread read-only (``services.sharing``): the owner's form posts on the thread page's
"Share" panel, and the page a read-only link opens.

The link page is open to anyone holding the link, signed in or not (the link is the credential, as a
"anyone with the link" document link is). It shows the transcript alone, as it is when the page is
loaded: no fragment, file, socket, composer or side panel of the thread is reachable with a link, so a
holder learns nothing beyond the messages. A revoked link, or a thread deleted since, is a friendly 404.
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from agent_platform.errors import ApplicationError
from conversations import pages, selectors
from conversations.access import thread_by_link
from conversations.branch_selectors import numbers_annotate
from conversations.services import sharing
from conversations.views import _not_found_as_404


def _owner(request: HttpRequest) -> AbstractBaseUser:
    """The signed-in caller (``login_required`` turned everyone else away first); the services find
    only their own threads."""
    if not isinstance(request.user, AbstractBaseUser):  # pragma: no cover - login_required answered
        raise PermissionDenied
    return request.user


def _to_thread(thread_id: uuid.UUID) -> HttpResponse:
    return redirect("conversations:thread-detail", thread_id=thread_id)


@login_required
@require_POST
@_not_found_as_404
def thread_share_add(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    username = request.POST.get("username", "")
    try:
        share = sharing.thread_share_add(thread_id=thread_id, user=_owner(request), username=username)
    except ApplicationError as error:
        if error.status == 404:
            raise
        messages.error(request, error.message)
    else:
        messages.success(
            request, _("Shared with %(name)s (read-only).") % {"name": share.user.get_username()}
        )
    return _to_thread(thread_id)


@login_required
@require_POST
@_not_found_as_404
def thread_share_remove(request: HttpRequest, thread_id: uuid.UUID, user_id: int) -> HttpResponse:
    sharing.thread_share_remove(thread_id=thread_id, user=_owner(request), reader_id=user_id)
    return _to_thread(thread_id)


@login_required
@require_POST
@_not_found_as_404
def thread_link_create(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    sharing.thread_link_create(thread_id=thread_id, user=_owner(request))
    return _to_thread(thread_id)


@login_required
@require_POST
@_not_found_as_404
def thread_link_revoke(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    if sharing.thread_link_revoke(thread_id=thread_id, user=_owner(request)):
        messages.success(request, _("The link is revoked: it opens nothing any more."))
    return _to_thread(thread_id)


@require_GET
def thread_link_read(request: HttpRequest, token: str) -> HttpResponse:
    conversation = thread_by_link(token=token)
    if conversation is None:
        response = render(request, "conversations/link_missing.html", status=404)
    else:
        transcript = pages.transcript_order(selectors.message_list_latest(conversation=conversation))
        numbers_annotate(conversation=conversation, messages=transcript)
        context = {
            "conversation": conversation,
            "messages_list": transcript,
            "can_act": False,
            "saved_paths": selectors.thread_saved_results(conversation=conversation),
            "boundary_seq": None,
        }
        response = render(request, "conversations/thread_link.html", context)
    # The token is in the path: never send it on to another site (same-origin: the page's own forms
    # keep their Origin, which CSRF checks), nor let the page be indexed.
    response["Referrer-Policy"] = "same-origin"
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Cache-Control"] = "private, no-store"
    return response
