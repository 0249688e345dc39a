"""The real URLs plus test-only seeding endpoints under /__e2e__/ (never mounted outside the tests)."""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from agent_platform.models import Agent
from conversations import events
from conversations.models import AgentRun, Conversation
from conversations.services import thread_create
from tests.conversations.page_support import write_token_usage

USERNAME = "alice"
PASSWORD = "pw-alice-123"
AGENT_SLUG = "assistant"


@csrf_exempt
@require_POST
def seed(request: HttpRequest) -> JsonResponse:
    data = json.loads(request.body or b"{}")
    action = data["action"]
    if action == "setup":
        user_model = get_user_model()
        if not user_model.objects.filter(username=USERNAME).exists():
            user_model.objects.create_user(USERNAME, "alice@example.com", PASSWORD)
        # Keep two messages after a summary, so a short thread already has history to compress.
        Agent.objects.get_or_create(
            slug=AGENT_SLUG, defaults={"name": "Assistant", "summary_keep_messages": 2}
        )
        return JsonResponse({"username": USERNAME, "password": PASSWORD, "agent": AGENT_SLUG})
    if action == "thread":
        user = get_user_model().objects.get(username=USERNAME)
        conversation = thread_create(user=user, agent_slug=AGENT_SLUG, title=data.get("title", ""))
        return JsonResponse({"thread_id": str(conversation.thread_id)})
    conversation = Conversation.objects.get(thread_id=data["thread_id"])
    if action == "usage":
        write_token_usage(conversation, data["usage"])  # through the state repository, as the middleware does
        return JsonResponse({})
    if action == "run":
        run = AgentRun.objects.create(conversation=conversation, status=data["status"])
        events.broadcast(conversation.thread_id, events.RUN_STATUS, run_id=run.pk, status=run.status)
        return JsonResponse({"run_id": run.pk})
    if action == "finish_runs":
        AgentRun.objects.filter(conversation=conversation, status__in=AgentRun.ACTIVE_STATUSES).update(
            status=AgentRun.Status.SUCCEEDED
        )
        events.broadcast(conversation.thread_id, events.RUN_STATUS, run_id=0, status="succeeded")
        return JsonResponse({})
    if action == "event":
        events.broadcast(conversation.thread_id, data["type"], **data.get("payload", {}))
        return JsonResponse({})
    return JsonResponse({"error": f"unknown action {action}"}, status=400)


urlpatterns = [
    path("__e2e__/seed", seed),
    path("", include("agent_platform.urls")),
]
