"""The admin names and revokes API tokens; a token's owner is fixed when it is issued."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from agent_platform.models import ApiToken
from agent_platform.services import api_token_issue

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:agent_platform_apitoken_changelist")


@pytest.fixture
def token_staff(django_user_model):
    staff = django_user_model.objects.create_user("ops", password="pw-ops-123", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(codename__in=["view_apitoken", "change_apitoken"]))
    return staff


def test_a_crafted_post_cannot_move_a_token_to_another_user(client, token_staff, user):
    own, raw = api_token_issue(user=token_staff, name="mine")
    client.force_login(token_staff)
    url = reverse("admin:agent_platform_apitoken_change", args=[own.pk])
    assert 'name="user"' not in client.get(url).content.decode()

    response = client.post(url, {"user": user.pk, "name": "renamed", "revoked_at_0": "", "revoked_at_1": ""})
    assert response.status_code == 302
    own.refresh_from_db()
    assert own.user == token_staff and own.name == "renamed"
    assert ApiToken.objects.authenticate(raw) == token_staff


def test_a_crafted_post_cannot_unrevoke_a_token(client, token_staff, user):
    token, raw = api_token_issue(user=user)
    client.force_login(token_staff)
    client.post(CHANGELIST, {"action": "revoke", "_selected_action": [token.pk]})
    token.refresh_from_db()
    assert token.revoked_at is not None
    url = reverse("admin:agent_platform_apitoken_change", args=[token.pk])
    client.post(url, {"name": "again", "revoked_at_0": "", "revoked_at_1": ""})
    token.refresh_from_db()
    assert token.revoked_at is not None and ApiToken.objects.authenticate(raw) is None


def test_the_admin_cannot_issue_tokens(client, admin_user):
    client.force_login(admin_user)
    assert client.get(reverse("admin:agent_platform_apitoken_add")).status_code == 403
