"""Page fragments of thread maintenance: the compression card of a live state, and the preview a user
sees before "Compress context" folds."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agent_platform.errors import ApplicationError, NotFound
from compression.panels import compression_status_from
from compression.services import thread_compress_preview
from conversations.selectors import thread_get


@login_required
@require_GET
def fragment_compress_preview(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The preview panel (``_compress_preview.html``): what applying would fold and keep. Reads only."""
    try:
        preview = thread_compress_preview(thread_id=thread_id, user=request.user)
    except NotFound as exc:
        raise Http404(exc.message) from exc
    except ApplicationError as exc:  # e.g. the agent lacks the capability: shown in the panel
        return render(
            request, "compression/_compress_preview.html", {"error": exc.message}, status=exc.status
        )
    return render(request, "compression/_compress_preview.html", {"preview": preview, "thread_id": thread_id})


@login_required
@require_GET
def fragment_compression(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The card for a transient live state (``?status=started``, or ``?status=failed&error=...`` for a
    request that failed before the server recorded anything); recorded outcomes come with the state.
    Missing, deleted and foreign threads all answer 404 (no existence leak)."""
    try:
        conversation = thread_get(thread_id=thread_id, user=request.user)
    except NotFound as exc:
        raise Http404(exc.message) from exc
    return render(
        request,
        "compression/_compression_status.html",
        {
            "conversation": conversation,
            "compression": compression_status_from(request.GET.dict()),
            "can_act": conversation.owner_id == request.user.pk,  # Stop is the owner's alone
        },
    )
