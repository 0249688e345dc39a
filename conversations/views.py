"""Server-rendered chat pages."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET


@login_required
@require_GET
def thread_list(request: HttpRequest) -> HttpResponse:
    conversations = request.user.conversations.filter(status="active").select_related("agent")
    return render(request, "conversations/thread_list.html", {"conversations": conversations})
