"""A version's whole branch, read-only, and its two actions: "Continue from this version" (the owner)
and "Fork into a new thread" (whoever may read the thread), as form posts (``services.branches``)."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from agent_platform.errors import ApplicationError, NotFound
from conversations import selectors
from conversations.access import can_act
from conversations.branch_selectors import message_branch
from conversations.errors import AgentNotFound
from conversations.services.branches import branch_continue, branch_fork
from conversations.views import _error_text, _not_found_as_404, thread_missing


def _signed_in(request: HttpRequest) -> AbstractBaseUser:
    """The signed-in caller (``login_required`` turned everyone else away first)."""
    if not isinstance(request.user, AbstractBaseUser):  # pragma: no cover - login_required answered
        raise PermissionDenied
    return request.user


def _branch_url(thread_id: uuid.UUID, message_id: int, seq: int | None = None) -> str:
    url = reverse("conversations:thread-branch", kwargs={"thread_id": thread_id, "message_id": message_id})
    return f"{url}#message-{seq}" if seq else url


@login_required
@require_GET
@_not_found_as_404
def branch_detail(request: HttpRequest, thread_id: uuid.UUID, message_id: int) -> HttpResponse:
    try:
        conversation = selectors.thread_get(thread_id=thread_id, user=_signed_in(request))
    except NotFound:
        return thread_missing(request, thread_id)
    view = message_branch(conversation=conversation, message_id=message_id)
    context = {
        "conversation": conversation,
        "branch": view,
        "messages_list": view.messages,
        "can_act": False,  # a branch page reads; its actions are its own two forms
        "is_owner": can_act(conversation, request.user),
        "may_fork": True,  # whoever reads the thread here may copy it into a thread of their own
        "saved_paths": selectors.thread_saved_results(conversation=conversation),
        "boundary_seq": None,
        "request_key": uuid.uuid4().hex,  # one per page: a double submit makes one continue or fork
    }
    return render(request, "conversations/thread_branch.html", context)


@login_required
@require_POST
@_not_found_as_404
def branch_continue_view(request: HttpRequest, thread_id: uuid.UUID, message_id: int) -> HttpResponse:
    try:
        result = branch_continue(
            thread_id=thread_id,
            message_id=message_id,
            user=_signed_in(request),
            request_id=request.POST.get("request_id") or None,
        )
    except NotFound:
        raise
    except ApplicationError as error:
        messages.error(request, _error_text(error))
        return redirect(_branch_url(thread_id, message_id))
    messages.success(request, _("This version is the current one again; the agent goes on from it."))
    url = reverse("conversations:thread-detail", kwargs={"thread_id": thread_id})
    return redirect(f"{url}#message-{result.message.seq}")


@login_required
@require_POST
@_not_found_as_404
def branch_fork_view(request: HttpRequest, thread_id: uuid.UUID, message_id: int) -> HttpResponse:
    try:
        result = branch_fork(
            thread_id=thread_id,
            message_id=message_id,
            user=_signed_in(request),
            request_id=request.POST.get("request_id") or None,
        )
    except NotFound as error:
        if not isinstance(error, AgentNotFound):  # the thread or the message: a 404 page
            raise
        messages.error(request, _error_text(error))  # the thread's agent was disabled: said here
        return redirect(_branch_url(thread_id, message_id))
    except ApplicationError as error:
        messages.error(request, _error_text(error))
        return redirect(_branch_url(thread_id, message_id))
    messages.success(request, _("A new thread of yours holds this branch up to the message you chose."))
    return redirect("conversations:thread-detail", thread_id=result.conversation.thread_id)
