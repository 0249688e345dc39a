"""The real URLs plus test-only seeding endpoints under /__e2e__/ (never mounted outside the tests)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.http import HttpRequest, JsonResponse
from django.test import RequestFactory
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from django_ratelimit.core import get_usage
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agent_platform.knowledge.models import KnowledgeBase
from agent_platform.knowledge.services import document_ingest
from agent_platform.local_model import seed_local_agent
from agent_platform.models import Agent, ModelEndpoint
from agent_platform.runtime import models as runtime_models
from agent_platform.runtime.offline import OfflineChatModel
from agent_platform.throttle import RateLimited, limits_for, throttled
from agent_platform.workdir import workdir_for
from compression.models import CompressionRecord
from conversations import events
from conversations.models import AgentRun, Conversation, Message
from conversations.services import thread_create
from conversations.services.threads import NewMessage, conversation_lock, message_append
from tests.conversations.page_support import write_token_usage

USERNAME = "alice"
PASSWORD = "pw-alice-123"
STAFF_USERNAME = "root"
STAFF_PASSWORD = "pw-root-123"
AGENT_SLUG = "assistant"
REAL_CHAT_MODEL_FOR = runtime_models.chat_model_for


# A minute spent here must still be spent when the page acts on it, seconds later: the per-minute
# limits are fixed windows (django-ratelimit), and an attempt made after the window turned is admitted.
SPENT_MINUTE_LEFT_SECONDS = 20


def _window_with_time_left(request: HttpRequest, action: str) -> None:
    """Wait for the next window of ``action``'s per-minute count when this one ends too soon."""
    per_minute = limits_for(action).per_minute
    if not per_minute:
        return
    usage = get_usage(request, group=f"throttle.{action}", key="user", rate=f"{per_minute}/m")
    if usage is not None and 0 <= usage["time_left"] < SPENT_MINUTE_LEFT_SECONDS:
        time.sleep(usage["time_left"] + 1)


class SlowOfflineModel(OfflineChatModel):
    """The offline model, streaming one word every ``delay`` seconds (so a test can Stop or reload)."""

    delay: float = 0.2

    def _stream(self, *args, **kwargs):
        for chunk in super()._stream(*args, **kwargs):
            time.sleep(self.delay)
            yield chunk


class SlowSummaryModel(OfflineChatModel):
    """The offline model, answering a summary (a non-streamed call) only after ``delay`` seconds (so a
    test can watch a compression job's progress and Stop it)."""

    delay: float = 30.0

    def _generate(self, *args, **kwargs):
        time.sleep(self.delay)
        return super()._generate(*args, **kwargs)

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        # Inside a run the summary call is streamed (the run's callbacks ask for it, the summary's tag
        # keeps it off the page): it waits too. The run's own reply does not.
        if messages and "<messages>" in str(messages[-1].content):
            time.sleep(self.delay)
        yield from super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs)


class EchoingSummaryModel(OfflineChatModel):
    """The offline model, answering a summary (a non-streamed call) with the summary prompt copied back,
    as SmolLM2 does (issue 37): validation refuses it, and the memory is the extractive summary."""

    def _generate(self, messages, *args, **kwargs):
        prompt = "\n".join(str(m.content) for m in messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(prompt))])


@csrf_exempt
@require_POST
def seed(request: HttpRequest) -> JsonResponse:
    """Run the seeder the body's ``action`` names: a scenario of the server (``SEEDERS``) or of the thread
    ``thread_id`` (``THREAD_SEEDERS``)."""
    data = json.loads(request.body or b"{}")
    action = data["action"]
    if action in SEEDERS:
        return SEEDERS[action](data)
    if action in THREAD_SEEDERS:
        conversation = Conversation.objects.get(thread_id=data["thread_id"])
        return THREAD_SEEDERS[action](conversation, data)
    return JsonResponse({"error": f"unknown action {action}"}, status=400)


def _setup(data: dict) -> JsonResponse:
    user_model = get_user_model()
    if not user_model.objects.filter(username=USERNAME).exists():
        user_model.objects.create_user(USERNAME, "alice@example.com", PASSWORD)
    if not user_model.objects.filter(username=STAFF_USERNAME).exists():
        user_model.objects.create_superuser(STAFF_USERNAME, "root@example.com", STAFF_PASSWORD)
    # Something for query_kb to search (a tool with nothing to search is left out of the agent's).
    kb, _ = KnowledgeBase.objects.get_or_create(slug="policies", defaults={"name": "Policies"})
    if not kb.documents.exists():
        document_ingest(kb=kb, title="Refund policy", text="Refunds are paid within 14 days.")
    # Keep two messages after a summary, so a short thread already has history to compress.
    Agent.objects.get_or_create(slug=AGENT_SLUG, defaults={"name": "Assistant", "summary_keep_messages": 2})
    return JsonResponse({"username": USERNAME, "password": PASSWORD, "agent": AGENT_SLUG})


def _slow_model(data: dict) -> JsonResponse:
    """Runs execute in this process: the next runs stream slowly."""
    runtime_models.chat_model_for = _slow_factory(float(data.get("delay", 0.2)))
    return JsonResponse({})


def _slow_summary(data: dict) -> JsonResponse:
    """Compression jobs run in this process: their summary waits."""
    delay = float(data.get("delay", 30))
    runtime_models.chat_model_for = lambda agent: SlowSummaryModel(
        delay=delay, profile=REAL_CHAT_MODEL_FOR(agent).profile
    )
    return JsonResponse({})


def _echoing_summary(data: dict) -> JsonResponse:
    """Summaries (in-run and manual) come back as the prompt echoed: refused, so extractive."""
    runtime_models.chat_model_for = lambda agent: EchoingSummaryModel(
        profile=REAL_CHAT_MODEL_FOR(agent).profile
    )
    return JsonResponse({})


def _failing_model(data: dict) -> JsonResponse:
    """The next runs fail as a misconfigured endpoint does."""
    runtime_models.chat_model_for = _failing_factory(data["error"])
    return JsonResponse({})


def _fast_model(data: dict) -> JsonResponse:
    runtime_models.chat_model_for = REAL_CHAT_MODEL_FOR
    return JsonResponse({})


def _staff(data: dict) -> JsonResponse:
    user_model = get_user_model()
    if not user_model.objects.filter(username=STAFF_USERNAME).exists():
        user_model.objects.create_superuser(STAFF_USERNAME, "root@example.com", STAFF_PASSWORD)
    return JsonResponse({"username": STAFF_USERNAME, "password": STAFF_PASSWORD})


def _reader(data: dict) -> JsonResponse:
    """A plain user with no permissions (someone a thread is shared with)."""
    user_model = get_user_model()
    if not user_model.objects.filter(username=data["username"]).exists():
        user_model.objects.create_user(data["username"], password=data["password"])
    return JsonResponse({"username": data["username"]})


def _agent(data: dict) -> JsonResponse:
    fields = data.get("fields", {})
    agent, _ = Agent.objects.update_or_create(slug=data["slug"], defaults={"name": data["slug"], **fields})
    return JsonResponse({"agent_id": agent.pk, "trigger": agent.effective_trigger})


def _local_agent(data: dict) -> JsonResponse:
    """The real llama.cpp server the test process started (issue 31)."""
    agent = seed_local_agent(
        base_url=data["base_url"], context_window=data["context_window"], api_key=data.get("api_key", "")
    )
    agent.tools = []
    agent.save()
    return JsonResponse({"agent": agent.slug})


def _throttle(data: dict) -> JsonResponse:
    """Set THROTTLE_* limits in this server; "spend" uses up alice's minute."""
    for name, value in data.get("limits", {}).items():
        setattr(settings, name, value)
    cache.clear()
    request = RequestFactory().post("/")
    request.user = get_user_model().objects.get(username=USERNAME)
    for kind in data.get("spend", []):
        _window_with_time_left(request, kind)
        with contextlib.suppress(RateLimited), throttled(request, kind):
            pass
    return JsonResponse({})


def _endpoint(data: dict) -> JsonResponse:
    endpoint, _ = ModelEndpoint.objects.update_or_create(name=data["name"], defaults=data.get("fields", {}))
    return JsonResponse({"endpoint_id": endpoint.pk})


def _agent_threads(data: dict) -> JsonResponse:
    """Threads whose stored figure of the next request is ``tokens``."""
    user = get_user_model().objects.get(username=USERNAME)
    agent = Agent.objects.get(slug=data["agent"])
    Conversation.objects.bulk_create(
        Conversation(owner=user, agent=agent, title=f"Thread {i}", context_tokens=tokens)
        for i, tokens in enumerate(data["tokens"])
    )
    return JsonResponse({})


def _thread(data: dict) -> JsonResponse:
    user = get_user_model().objects.get(username=USERNAME)
    conversation = thread_create(
        user=user, agent_slug=data.get("agent", AGENT_SLUG), title=data.get("title", "")
    )
    return JsonResponse({"thread_id": str(conversation.thread_id)})


def _file(conversation: Conversation, data: dict) -> JsonResponse:
    workdir_for(conversation).write_text(data["path"], data["text"])
    return JsonResponse({})


def _records(conversation: Conversation, data: dict) -> JsonResponse:
    records = conversation.compression_records.values("trigger", "level", "status", "outcome")
    return JsonResponse({"records": list(records)})


def _usage(conversation: Conversation, data: dict) -> JsonResponse:
    write_token_usage(conversation, data["usage"])  # through the state repository, as the middleware does
    return JsonResponse({})


def _run(conversation: Conversation, data: dict) -> JsonResponse:
    run = AgentRun.objects.create(conversation=conversation, status=data["status"])
    events.broadcast(conversation.thread_id, events.RUN_STATUS, run_id=run.pk, status=run.status)
    return JsonResponse({"run_id": run.pk})


def _finish_runs(conversation: Conversation, data: dict) -> JsonResponse:
    AgentRun.objects.filter(conversation=conversation, status__in=AgentRun.ACTIVE_STATUSES).update(
        status=AgentRun.Status.SUCCEEDED
    )
    events.broadcast(conversation.thread_id, events.RUN_STATUS, run_id=0, status="succeeded")
    return JsonResponse({})


def _messages(conversation: Conversation, data: dict) -> JsonResponse:
    """Transcript rows as a finished exchange would leave them."""
    with conversation_lock(conversation_id=conversation.pk):
        for role, content in data["messages"]:
            run = (
                AgentRun.objects.create(conversation=conversation, status="succeeded")
                if role == "user"
                else None
            )
            message_append(
                conversation=conversation,
                message=NewMessage(role=role, content=content, run=run or _last_run(conversation)),
            )
    return JsonResponse({"count": Message.objects.filter(conversation=conversation).count()})


def _run_waited(result) -> None:
    """Wait for an in-process run (dispatched on commit) to end."""
    for _attempt in range(400):
        result.run.refresh_from_db()
        if result.run.status not in AgentRun.ACTIVE_STATUSES:
            return
        time.sleep(0.05)
    raise TimeoutError(f"run {result.run.pk} did not end")


def _branched(conversation: Conversation, data: dict) -> JsonResponse:
    """Turns said through the services (``data["said"]``), then the turn ``data["edit"][0]`` (0-based)
    edited to ``data["edit"][1]``: an earlier branch, with its whole tail, and a current one."""
    from conversations.services import message_intake
    from conversations.services.versions import message_edit

    said = []
    for content in data["said"]:
        result = message_intake(thread_id=conversation.thread_id, user=conversation.owner, content=content)
        _run_waited(result)
        said.append(result.message.pk)
    index, content = data["edit"]
    result = message_edit(
        thread_id=conversation.thread_id, message_id=said[index], user=conversation.owner, content=content
    )
    _run_waited(result)
    return JsonResponse({"said": said, "edited": result.message.pk})


def _failed_compression(conversation: Conversation, data: dict) -> JsonResponse:
    CompressionRecord.objects.create(
        conversation=conversation, trigger="auto", level="summary", status="failed", error=data["error"]
    )
    events.broadcast(
        conversation.thread_id, events.COMPRESSION, status="failed", level="summary", error=data["error"]
    )
    return JsonResponse({})


def _record(conversation: Conversation, data: dict) -> JsonResponse:
    record = CompressionRecord.objects.create(conversation=conversation, **data["fields"])
    return JsonResponse({"record_id": record.pk})


def _event(conversation: Conversation, data: dict) -> JsonResponse:
    events.broadcast(conversation.thread_id, data["type"], **data.get("payload", {}))
    return JsonResponse({})


# The scenarios of the server: each seeder takes the request's body.
SEEDERS: dict[str, Callable[[dict], JsonResponse]] = {
    "setup": _setup,
    "slow_model": _slow_model,
    "slow_summary": _slow_summary,
    "echoing_summary": _echoing_summary,
    "failing_model": _failing_model,
    "fast_model": _fast_model,
    "staff": _staff,
    "reader": _reader,
    "agent": _agent,
    "local_agent": _local_agent,
    "throttle": _throttle,
    "endpoint": _endpoint,
    "agent_threads": _agent_threads,
    "thread": _thread,
}
# The scenarios of one thread (the body's ``thread_id``): each seeder takes its conversation and the body.
THREAD_SEEDERS: dict[str, Callable[[Conversation, dict], JsonResponse]] = {
    "file": _file,
    "records": _records,
    "usage": _usage,
    "run": _run,
    "finish_runs": _finish_runs,
    "messages": _messages,
    "branched": _branched,
    "failed_compression": _failed_compression,
    "record": _record,
    "event": _event,
}


def _slow_factory(delay: float):
    def chat_model_for(agent):
        model = REAL_CHAT_MODEL_FOR(agent)
        return (
            SlowOfflineModel(delay=delay, profile=model.profile)
            if isinstance(model, OfflineChatModel)
            else model
        )

    return chat_model_for


def _failing_factory(error: str):
    def chat_model_for(agent):
        raise runtime_models.ModelConfigurationError(error)

    return chat_model_for


def _last_run(conversation: Conversation) -> AgentRun | None:
    return conversation.runs.order_by("-id").first()


urlpatterns = [
    path("__e2e__/seed", seed),
    path("", include("config.urls")),
]
