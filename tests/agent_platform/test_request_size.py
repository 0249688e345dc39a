"""A body over DATA_UPLOAD_MAX_MEMORY_SIZE: 413 ``{"code", "message"}`` on the API, a form error on pages."""

from __future__ import annotations

import json

import pytest
from django.contrib.messages import get_messages

pytestmark = pytest.mark.django_db

LIMIT = 4096


@pytest.fixture(autouse=True)
def small_limit(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT


@pytest.mark.parametrize("debug", [False, True])
def test_an_over_size_api_body_is_a_413_json(client, user, thread, settings, debug):
    settings.DEBUG = debug
    client.force_login(user)
    body = json.dumps({"content": "x" * (LIMIT * 2)})
    response = client.post(f"/api/threads/{thread.thread_id}/messages", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["code"] == "request_too_large"
    assert "4 KiB" in response.json()["message"]
    assert not thread.messages.exists()


def test_an_over_size_api_body_is_a_413_before_authentication(client, thread):
    response = client.post("/api/threads", "x" * (LIMIT * 2), content_type="application/json")
    assert response.status_code == 413 and response.json()["code"] == "request_too_large"


def test_a_body_under_the_limit_is_served(client, user, thread):
    client.force_login(user)
    body = json.dumps({"content": "x" * (LIMIT // 2)})
    response = client.post(f"/api/threads/{thread.thread_id}/messages", body, content_type="application/json")
    assert response.status_code == 202


def test_an_over_size_form_post_is_a_form_error_on_the_page(client, user, thread):
    client.force_login(user)
    page = f"http://testserver/threads/{thread.thread_id}/"
    response = client.post(
        f"/threads/{thread.thread_id}/messages", {"content": "x" * (LIMIT * 2)}, headers={"Referer": page}
    )
    assert response.status_code == 302 and response["Location"] == page
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "The request is too large: at most 4 KiB."
    ]
    assert not thread.messages.exists()
    assert "too large" in client.get(page).content.decode()


def test_an_over_size_fetch_post_gets_the_error_text_for_the_composer(client, user, thread):
    client.force_login(user)
    response = client.post(
        f"/threads/{thread.thread_id}/messages",
        {"content": "x" * (LIMIT * 2)},
        headers={"X-Requested-With": "fetch"},
    )
    assert response.status_code == 413
    assert response.content.decode() == "The request is too large: at most 4 KiB."


def test_a_foreign_referer_is_not_followed(client, user, thread):
    client.force_login(user)
    response = client.post(
        f"/threads/{thread.thread_id}/messages",
        {"content": "x" * (LIMIT * 2)},
        headers={"Referer": "https://evil.example/"},
    )
    assert response.status_code == 302 and response["Location"] == "/"
