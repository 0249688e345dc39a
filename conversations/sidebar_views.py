"""The sidebar's actions on a thread (pin, archive) and the bin (list, restore): plain form posts that
go back to the page they came from. Owner's alone: another user's or a missing thread is a 404, like
every thread write (``conversations.access``); a restore after the retention period is the thread
page's friendly 404."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from agent_platform.errors import NotFound
from conversations import selectors, services
from conversations.views import _not_found_as_404, thread_missing


def _signed_in(request: HttpRequest) -> AbstractBaseUser:
    """The signed-in user (``login_required`` turned everyone else away first)."""
    user = request.user
    if not isinstance(user, AbstractBaseUser):  # pragma: no cover - login_required answered already
        raise PermissionDenied
    return user


def _back(request: HttpRequest, fallback: str, **kwargs: Any) -> HttpResponse:
    """To the page the form was on (``next``, this site's only), else ``fallback``."""
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(fallback, **kwargs)


@login_required
@require_POST
@_not_found_as_404
def thread_pin(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Pin (``pinned=1``) or unpin the thread in its owner's sidebar."""
    services.thread_pin_set(
        thread_id=thread_id, user=_signed_in(request), pinned=request.POST.get("pinned") == "1"
    )
    return _back(request, "conversations:thread-detail", thread_id=thread_id)


@login_required
@require_POST
@_not_found_as_404
def thread_archive(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Archive (``archived=1``) or bring back the thread: out of the sidebar and the list, still readable."""
    archived = request.POST.get("archived") == "1"
    services.thread_archive_set(thread_id=thread_id, user=_signed_in(request), archived=archived)
    if archived:
        messages.success(request, _("Thread archived. It is listed under Archived."))
    return _back(request, "conversations:thread-detail", thread_id=thread_id)


@login_required
@require_GET
def thread_bin(request: HttpRequest) -> HttpResponse:
    """The caller's deleted threads, restorable until the retention period ends."""
    days = settings.THREAD_BIN_RETENTION_DAYS
    threads = [
        (thread, thread.deleted_at + timedelta(days=days) if thread.deleted_at else None)
        for thread in selectors.threads_in_bin(user=_signed_in(request))
    ]
    return render(request, "conversations/thread_bin.html", {"threads": threads, "retention_days": days})


@login_required
@require_POST
def thread_restore(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    try:
        conversation = services.thread_restore(thread_id=thread_id, user=_signed_in(request))
    except NotFound:
        return thread_missing(request)
    messages.success(request, _("Thread restored."))
    return redirect("conversations:thread-detail", thread_id=conversation.thread_id)
