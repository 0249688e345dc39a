"""API authentication: bearer tokens and sessions, JSON errors."""

from __future__ import annotations

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_missing_token_gets_401_json(client):
    response = client.get("/api/me")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"
    assert response.json()["message"]


def test_bad_token_gets_401_json(client, api_token):
    response = client.get("/api/me", headers={"Authorization": "Bearer ap_not-a-real-token"})
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"


def test_revoked_token_gets_401(client, user, bearer):
    from django.utils import timezone

    user.api_tokens.update(revoked_at=timezone.now())
    assert client.get("/api/me", headers=bearer).status_code == 401


def test_token_of_inactive_user_gets_401(client, user, bearer):
    user.is_active = False
    user.save()
    assert client.get("/api/me", headers=bearer).status_code == 401


def test_valid_token_authenticates(client, user, bearer):
    response = client.get("/api/me", headers=bearer)
    assert response.status_code == 200
    assert response.json()["username"] == "alice"


def test_session_auth_works_for_reads(client, user):
    client.force_login(user)
    assert client.get("/api/me").json()["username"] == "alice"


def test_create_api_token_command_prints_a_working_token(client, user, capsys):
    call_command("create_api_token", "alice")
    raw = capsys.readouterr().out.strip()
    assert raw.startswith("ap_")
    assert client.get("/api/me", headers={"Authorization": f"Bearer {raw}"}).status_code == 200


def test_create_api_token_for_unknown_user_is_an_error():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("create_api_token", "nobody")


def test_openapi_docs_are_served(client, user):
    client.force_login(user)
    assert client.get("/api/openapi.json").status_code == 200


def test_a_body_that_is_not_json_is_a_400_json_error(client, bearer):
    response = client.post("/api/threads", "{not json", content_type="application/json", headers=bearer)
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"
    assert response.json()["message"]


def test_an_unknown_api_path_is_a_json_404(client, bearer):
    response = client.get("/api/no-such-endpoint", headers=bearer)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert client.get("/api/me", headers=bearer).status_code == 200  # known paths still resolve first


def test_a_wrong_method_gets_a_json_405(client, user):
    client.force_login(user)
    response = client.get("/api/threads/00000000-0000-0000-0000-000000000000/compress")
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
    assert "POST" in response["Allow"]


def test_pages_keep_django_405(client, user):
    client.force_login(user)
    response = client.get("/accounts/logout/")
    assert response.status_code == 405
    assert not response.get("Content-Type", "").startswith("application/json")


# --- writes: 401 whatever the CSRF state, CSRF still guards sessions ---------------------------


@pytest.fixture
def csrf_client():
    from django.test import Client

    return Client(enforce_csrf_checks=True)


def _create_thread(client, **headers):
    return client.post(
        "/api/threads", {"agent": "test-agent"}, content_type="application/json", headers=headers
    )


@pytest.mark.parametrize("authorization", [None, "Bearer ap_not-a-real-token", "Bearer ", "Basic abc"])
def test_an_unauthenticated_write_gets_401_json_not_a_csrf_403(csrf_client, agent, authorization):
    headers = {"Authorization": authorization} if authorization is not None else {}
    response = _create_thread(csrf_client, **headers)
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized" and response.json()["message"]


def test_a_write_with_a_revoked_token_gets_401(csrf_client, user, agent, bearer):
    from django.utils import timezone

    assert _create_thread(csrf_client, **bearer).status_code == 201
    user.api_tokens.update(revoked_at=timezone.now())
    assert _create_thread(csrf_client, **bearer).status_code == 401


def test_a_session_write_without_the_csrf_token_is_still_refused(csrf_client, user, agent):
    csrf_client.force_login(user)
    response = _create_thread(csrf_client)
    assert response.status_code == 403
    assert not user.conversations.exists()
