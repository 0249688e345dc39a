"""Threads API: create, list, get, delete, messages, resume, state; owner-only, JSON errors."""

from __future__ import annotations

import pytest

from conversations.models import AgentRun, Conversation, Message

pytestmark = pytest.mark.django_db


def test_create_list_get_and_soft_delete_a_thread(client, user, agent, bearer):
    created = client.post(
        "/api/threads",
        {"agent": agent.slug, "title": "Hello"},
        content_type="application/json",
        headers=bearer,
    )
    assert created.status_code == 201, created.content
    thread_id = created.json()["thread_id"]
    assert created.json()["agent"] == agent.slug

    assert [t["thread_id"] for t in client.get("/api/threads", headers=bearer).json()] == [thread_id]
    assert client.get(f"/api/threads/{thread_id}", headers=bearer).json()["title"] == "Hello"

    assert client.delete(f"/api/threads/{thread_id}", headers=bearer).status_code == 204
    assert client.get(f"/api/threads/{thread_id}", headers=bearer).json()["code"] == "thread_not_found"
    assert client.get("/api/threads", headers=bearer).json() == []
    assert Conversation.objects.get(thread_id=thread_id).status == Conversation.Status.DELETED


def test_unknown_or_disabled_agent_is_404(client, agent, bearer):
    response = client.post("/api/threads", {"agent": "nope"}, content_type="application/json", headers=bearer)
    assert response.status_code == 404
    assert response.json()["code"] == "agent_not_found"
    agent.is_enabled = False
    agent.save()
    response = client.post(
        "/api/threads", {"agent": agent.slug}, content_type="application/json", headers=bearer
    )
    assert response.json()["code"] == "agent_not_found"


def test_another_users_thread_is_404_on_every_endpoint(client, other_user, thread):
    client.force_login(other_user)
    base = f"/api/threads/{thread.thread_id}"
    for response in (
        client.get(base),
        client.get(f"{base}/messages"),
        client.get(f"{base}/state"),
        client.delete(base),
        client.post(f"{base}/messages", {"content": "hi"}, content_type="application/json"),
        client.post(f"{base}/resume", {"answer": "x"}, content_type="application/json"),
    ):
        assert response.status_code == 404, response.content
        assert response.json()["code"] == "thread_not_found"
    assert not Message.objects.exists()


def test_posting_a_message_answers_202_and_the_offline_agent_replies(
    client, bearer, thread, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages",
            {"content": "hello there"},
            content_type="application/json",
            headers=bearer,
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["message"]["role"] == "user"
    assert body["message"]["seq"] == 1
    assert body["run"]["status"] == "queued"

    run = AgentRun.objects.get(pk=body["run"]["id"])
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert run.usage["total_tokens"] > 0
    messages = client.get(f"/api/threads/{thread.thread_id}/messages", headers=bearer).json()
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "Offline model" in messages[1]["content"]
    assert messages[1]["run_id"] == run.pk


def test_a_retried_request_id_returns_the_first_result(client, bearer, thread):
    url = f"/api/threads/{thread.thread_id}/messages"
    first = client.post(
        url, {"content": "one", "request_id": "r-1"}, content_type="application/json", headers=bearer
    )
    again = client.post(
        url, {"content": "one", "request_id": "r-1"}, content_type="application/json", headers=bearer
    )
    assert first.status_code == again.status_code == 202
    assert again.json()["run"]["id"] == first.json()["run"]["id"]
    assert again.json()["message"]["id"] == first.json()["message"]["id"]
    assert Message.objects.filter(conversation=thread).count() == 1
    assert AgentRun.objects.filter(conversation=thread).count() == 1


def test_empty_or_invalid_bodies_get_422(client, bearer, thread):
    url = f"/api/threads/{thread.thread_id}/messages"
    assert (
        client.post(url, {"content": ""}, content_type="application/json", headers=bearer).status_code == 422
    )
    response = client.post(url, {"content": "   "}, content_type="application/json", headers=bearer)
    assert response.status_code == 422
    assert response.json()["code"] == "empty_message"
    assert client.get("/api/threads/not-a-uuid", headers=bearer).status_code == 422


@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        ("", {"agent": "test-agent", "title": "a\x00b"}, "invalid_input"),
        ("", {"agent": "test-\x00agent"}, "agent_not_found"),
        ("/{thread_id}/messages", {"content": "a\x00b"}, "invalid_input"),
        ("/{thread_id}/messages", {"content": "hi", "request_id": "r\x00"}, "invalid_input"),
        ("/{thread_id}/resume", {"answer": "a\x00b"}, "invalid_input"),
    ],
)
def test_nul_characters_are_a_clear_error_not_a_500(client, bearer, thread, path, body, code):
    # PostgreSQL cannot store NUL in text: without the check this is a DataError (500) there.
    response = client.post(
        "/api/threads" + path.format(thread_id=thread.thread_id),
        body,
        content_type="application/json",
        headers=bearer,
    )
    assert response.status_code in (404, 422), response.content
    assert response.json()["code"] == code
    assert Conversation.objects.count() == 1
    assert not Message.objects.exists() and not AgentRun.objects.exists()


def test_resume_without_an_interrupted_run_is_409(client, bearer, thread):
    response = client.post(
        f"/api/threads/{thread.thread_id}/resume",
        {"answer": "yes"},
        content_type="application/json",
        headers=bearer,
    )
    assert response.status_code == 409
    assert response.json()["code"] == "not_interrupted"


def test_state_reports_busy_flags_and_no_usage_for_a_fresh_thread(client, bearer, thread):
    body = client.get(f"/api/threads/{thread.thread_id}/state", headers=bearer).json()
    assert body == {
        "thread_id": str(thread.thread_id),
        "token_usage": None,
        "compressing": False,
        "running": False,
        "queued": False,
        "interrupted": False,
        "interrupt": None,
        "latest_run": None,
    }


def test_a_queued_message_shows_in_state(client, bearer, thread):
    client.post(
        f"/api/threads/{thread.thread_id}/messages",
        {"content": "hi"},
        content_type="application/json",
        headers=bearer,
    )  # no on-commit callbacks run here: the run stays queued
    body = client.get(f"/api/threads/{thread.thread_id}/state", headers=bearer).json()
    assert body["queued"] is True and body["running"] is False
    assert body["latest_run"]["status"] == "queued"


def test_session_post_without_csrf_gets_403_json(user, agent):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/api/threads", {"agent": agent.slug}, content_type="application/json")
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    assert not Conversation.objects.exists()
