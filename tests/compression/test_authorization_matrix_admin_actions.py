"""The authorization matrix of the admin's actions: every action of every registered model admin ×
anonymous, owner, other user, staff without permissions, staff holding only
``conversations.view_conversation``, staff holding the action's own permission, and superuser.

The actions are found by walking the admin site, so a new action without an entry fails
``test_every_admin_action_has_an_entry``. Each action is posted to its changelist as the admin's form
posts it; a refused action must also leave no trace (no compression record, no revoked token, no
rebuilt chunk), and the changelist must not offer it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.utils import timezone

from agent_platform.knowledge.models import Chunk, KnowledgeBase
from agent_platform.knowledge.services import document_ingest
from agent_platform.models import ApiToken
from agent_platform.services import api_token_issue
from compression.models import CompressionRecord

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "owner", "other", "staff", "viewer", "holder", "superuser")
ADMIN_LOGIN = "admin-login"
RUNS, REFUSED, NOT_OFFERED = "runs", "refused", "not-offered"  # 302 and done; 403; 200 and nothing done


@dataclass(frozen=True)
class Action:
    changelist: str
    holder_perms: tuple[str, ...]  # what the "holder" role is given: the action's permission and a view
    target: str  # the fixture the action is applied to


def _expect(viewer: str) -> dict[str, str]:
    outsiders = dict.fromkeys(("anonymous", "owner", "other"), ADMIN_LOGIN)
    return {**outsiders, "staff": REFUSED, "viewer": viewer, "holder": RUNS, "superuser": RUNS}


THREADS = "/admin/conversations/conversation/"
COMPRESS_PERMS = ("conversations.view_conversation", "compression.compress_any_thread")

# (app_label, model_name, action) -> how it is reached and who may run it.
MATRIX: dict[tuple[str, str, str], tuple[Action, dict[str, str]]] = {
    ("conversations", "conversation", "compress_context"): (
        Action(THREADS, COMPRESS_PERMS, "thread"),
        _expect(viewer=NOT_OFFERED),
    ),
    ("conversations", "conversation", "bulk_compress"): (
        Action(THREADS, COMPRESS_PERMS, "thread"),
        _expect(viewer=NOT_OFFERED),
    ),
    ("conversations", "conversation", "delete_selected"): (
        Action(THREADS, ("conversations.view_conversation", "conversations.delete_conversation"), "thread"),
        _expect(viewer=NOT_OFFERED),
    ),
    ("agent_platform", "apitoken", "revoke"): (
        Action("/admin/agent_platform/apitoken/", ("agent_platform.change_apitoken",), "token"),
        _expect(viewer=REFUSED),
    ),
    ("axes", "accessattempt", "cleanup_expired_attempts"): (
        Action(
            "/admin/axes/accessattempt/", ("axes.delete_accessattempt", "axes.view_accessattempt"), "attempt"
        ),
        _expect(viewer=REFUSED),
    ),
    ("agent_platform", "document", "rechunk"): (
        Action("/admin/agent_platform/document/", ("agent_platform.change_document",), "document"),
        _expect(viewer=REFUSED),
    ),
}


def _admin_actions() -> set[tuple[str, str, str]]:
    """Every action each registered model admin can offer (the site-wide ``delete_selected`` included)."""
    found = set()
    for model, model_admin in admin.site._registry.items():
        for _func, name, _description in model_admin._get_base_actions():
            found.add((model._meta.app_label, model._meta.model_name, name))
    return found


def test_every_admin_action_declares_the_permission_it_needs():
    for model, model_admin in admin.site._registry.items():
        for func, name, _description in model_admin._get_base_actions():
            assert getattr(func, "allowed_permissions", ()), f"{model._meta.label}.{name} declares none"


def test_every_admin_action_has_an_entry():
    # delete_selected needs Django's delete permission on every model; it is tested on threads here.
    walked = {key for key in _admin_actions() if key[2] != "delete_selected"}
    listed = {key for key in MATRIX if key[2] != "delete_selected"}
    assert walked - listed == set(), "admin actions without an authorization entry"
    assert listed - walked == set(), "entries for admin actions that no longer exist"


@pytest.fixture
def people(django_user_model, user, other_user):
    def staff(name: str, *perms: str):
        person = django_user_model.objects.create_user(name, password=f"pw-{name}-123", is_staff=True)
        for perm in perms:
            app_label, codename = perm.split(".")
            person.user_permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )
        return person

    return {
        "anonymous": None,
        "owner": user,
        "other": other_user,
        "staff": staff("staff"),
        "viewer": staff("viewer", "conversations.view_conversation"),
        "holder": staff,  # made per action, from the entry's permissions
        "superuser": django_user_model.objects.create_superuser("root", password="pw-root-123"),
    }


@pytest.fixture
def targets(make_thread, user):
    """What each action is applied to, with the question "did the action happen to it?"."""
    thread = make_thread("Quarterly report", pressure=0.99)
    token, _raw = api_token_issue(user=user, name="laptop")
    kb = KnowledgeBase.objects.create(name="Handbook", slug="handbook")
    document = document_ingest(kb=kb, title="Leave policy", text="Paid leave is 25 days a year. " * 40)
    chunk_ids = set(document.chunks.values_list("pk", flat=True))
    attempt = AccessAttempt.objects.create(  # failed logins long past the cool-off: expired
        username="mallory",
        ip_address="203.0.113.9",
        user_agent="",
        path_info="/accounts/login/",
        failures_since_start=3,
    )
    AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=timezone.now() - timedelta(days=2))

    happened: dict[str, Callable[[], bool]] = {
        "thread": lambda: (
            CompressionRecord.objects.filter(conversation=thread).exists()
            or not type(thread).objects.filter(pk=thread.pk).exists()
        ),
        "token": lambda: ApiToken.objects.get(pk=token.pk).revoked_at is not None,
        "attempt": lambda: not AccessAttempt.objects.filter(pk=attempt.pk).exists(),
        "document": lambda: (
            set(Chunk.objects.filter(document=document).values_list("pk", flat=True)) != chunk_ids
        ),
    }
    return {"thread": thread.pk, "token": token.pk, "document": document.pk, "attempt": attempt.pk}, happened


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("key", sorted(MATRIX), ids=lambda key: ".".join(key))
def test_admin_action_matrix(client, people, targets, summarizer, settings, key, role):
    summarizer()
    settings.CELERY_BROKER_URL = "memory://"  # bulk compaction runs in the request: its effect is seen
    action, expect = MATRIX[key]
    person = people[role]
    if role == "holder":
        person = person("holder", *action.holder_perms)
    if person is not None:
        client.force_login(person)
    pks, happened = targets

    page = client.get(action.changelist)
    response = client.post(action.changelist, {"action": key[2], "_selected_action": [pks[action.target]]})

    expected = expect[role]
    if expected == ADMIN_LOGIN:
        assert page.status_code == response.status_code == 302
        assert response["Location"].startswith("/admin/login/")
    elif expected == REFUSED:
        assert page.status_code == response.status_code == 403
    elif expected == NOT_OFFERED:
        assert page.status_code == 200 and f'value="{key[2]}"' not in page.content.decode()
        assert response.status_code in (200, 302)  # the changelist again, or "no action selected"
    else:
        assert page.status_code == 200 and f'value="{key[2]}"' in page.content.decode()
        # delete_selected asks for a confirmation first (200); the others act and redirect.
        assert response.status_code == (200 if key[2] == "delete_selected" else 302)
        if key[2] == "delete_selected":
            response = client.post(
                action.changelist,
                {"action": key[2], "_selected_action": [pks[action.target]], "post": "yes"},
            )
            assert response.status_code == 302
    assert happened[action.target]() == (expected == RUNS), "the action ran for a role it must refuse"
