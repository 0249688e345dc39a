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


def _set_usage(conversation: Conversation, usage: dict) -> str:
    write_token_usage(conversation, usage)  # through the state repository, as the middleware writes it
    return "state"


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
        return JsonResponse({"through": _set_usage(conversation, data["usage"])})
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


def _real_compress_route() -> bool:
    from compression.api import router

    return any("compress" in route for route in router.path_operations)


@require_POST
def compress_stand_in(request: HttpRequest, thread_id) -> JsonResponse:
    """The manual-compression contract (SPEC 8), for as long as the real endpoint is not mounted."""
    from conversations import selectors

    conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    flags = selectors.thread_busy_flags(conversation=conversation)
    if flags["running"] or flags["queued"] or flags["interrupted"]:
        return JsonResponse({"code": "thread_busy", "message": "The thread is busy."}, status=409)
    before = selectors.thread_token_usage(conversation=conversation) or {}
    after = {
        **before,
        "next_llm_input_tokens": 9000,
        "summary_pressure_ratio": 0.0879,
        "summary_active": True,
    }
    _set_usage(conversation, after)
    return JsonResponse(
        {
            "status": "completed",
            "before_tokens": before.get("next_llm_input_tokens", 0),
            "after_tokens": 9000,
            "compressed_messages": 4,
            "file_path": "outputs/conversation_history/session_e2e.md",
        }
    )


urlpatterns = [
    path("__e2e__/seed", seed),
    *([] if _real_compress_route() else [path("api/threads/<uuid:thread_id>/compress", compress_stand_in)]),
    path("", include("agent_platform.urls")),
]
