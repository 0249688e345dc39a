"""End users see no internals: a failed run tells its thread (transcript, page, API, socket) in plain
words that name no endpoint, environment variable or exception class; the admin and the log keep the
exception as raised."""

from __future__ import annotations

import httpx
import openai
import pytest

from agent_platform.runtime.models import ModelConfigurationError
from conversations.models import AgentRun
from conversations.services import message_intake

pytestmark = pytest.mark.django_db

ENDPOINT_URL = "https://llm.internal.example:8443/v1/chat/completions"
REQUEST = httpx.Request("POST", ENDPOINT_URL)

FAILURES = {
    "key not set": (
        ModelConfigurationError(
            "Endpoint 'Internal vLLM' has no key: set the environment variable VLLM_API_KEY, or clear it."
        ),
        "The agent's model is not set up correctly. An administrator can see why.",
        ("ModelConfigurationError", "VLLM_API_KEY", "Internal vLLM"),
    ),
    "key refused": (
        openai.AuthenticationError(
            f"Error code: 401 - Incorrect API key provided: sk-abc123 at {ENDPOINT_URL}",
            response=httpx.Response(401, request=REQUEST),
            body=None,
        ),
        "The model service refused the platform's credentials. An administrator can see why.",
        ("AuthenticationError", "sk-abc123", "llm.internal"),
    ),
    "server unreachable": (
        openai.APIConnectionError(message=f"Connection error to {ENDPOINT_URL}", request=REQUEST),
        "The model service could not be reached. Try again later.",
        ("APIConnectionError", "llm.internal", "8443"),
    ),
    "anything else": (
        KeyError("OPENAI_API_KEY"),
        "Something went wrong on the platform's side. An administrator can see why.",
        ("KeyError", "OPENAI_API_KEY"),
    ),
}


@pytest.fixture
def sent_events(monkeypatch):
    sent: list[dict] = []
    monkeypatch.setattr("conversations.events._send", lambda thread_id, event: sent.append(event))
    return sent


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failed_run_names_no_endpoint_variable_or_exception_class_to_its_users(
    failure, thread, user, owner_client, scripted_model, sent_events, django_capture_on_commit_callbacks
):
    exc, words, internals = FAILURES[failure]
    scripted_model(exc)
    with django_capture_on_commit_callbacks(execute=True):
        run = message_intake(thread_id=thread.thread_id, user=user, content="hello").run
    run.refresh_from_db()

    assert run.status == AgentRun.Status.FAILED and run.error == words
    shown = {
        "transcript": thread.messages.get(role="system").content,
        "page": owner_client.get(f"/threads/{thread.thread_id}/").content.decode(),
        "api state": owner_client.get(f"/api/threads/{thread.thread_id}/state").content.decode(),
        "api messages": owner_client.get(f"/api/threads/{thread.thread_id}/messages").content.decode(),
        "socket": str([e for e in sent_events if e.get("status") == "failed"]),
    }
    assert shown["transcript"] == f"This turn failed: {words}"
    for where, text in shown.items():
        leaked = [internal for internal in internals if internal in text]
        assert leaked == [], f"{where} shows {leaked}"
    # The admin keeps the exception as raised.
    assert run.error_detail.startswith(type(exc).__name__) and internals[1] in run.error_detail


def test_the_admin_shows_the_detail_of_a_failed_run(
    thread, user, client, django_user_model, scripted_model, django_capture_on_commit_callbacks
):
    scripted_model(KeyError("OPENAI_API_KEY"))
    with django_capture_on_commit_callbacks(execute=True):
        run = message_intake(thread_id=thread.thread_id, user=user, content="hello").run
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    page = client.get(f"/admin/conversations/agentrun/{run.pk}/change/").content.decode()
    assert "KeyError: &#x27;OPENAI_API_KEY&#x27;" in page


def test_a_chinese_page_shows_the_failure_in_chinese(
    thread, user, owner_client, scripted_model, django_capture_on_commit_callbacks
):
    scripted_model(KeyError("OPENAI_API_KEY"))
    with django_capture_on_commit_callbacks(execute=True):
        message_intake(thread_id=thread.thread_id, user=user, content="hello")
    page = owner_client.get(f"/threads/{thread.thread_id}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "平台内部出错" in page and "Something went wrong" not in page.split('id="run-status"')[-1][:2000]
