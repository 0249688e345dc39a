"""The authorization matrix of the compression jobs' admin pages: every URL the job admin serves ×
anonymous, the thread's owner, another user, staff without permissions, staff holding only the
records' view permission, staff holding ``compression.view_compressionjob``, staff holding it and
``conversations.view_conversation``, and superuser. A job shows its thread's title and owner: the
job's view permission opens only the jobs of threads the holder may see (issue 38).

The job admin is read-only for everyone (no add, change or delete, even for a superuser); a refused
request leaves the job as it was. The URLs are found from the admin's own URL patterns, so a new one
without an entry fails ``test_every_job_admin_url_has_an_entry``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.utils import timezone

from compression.models import CompressionJob

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "owner", "other", "staff", "record_viewer", "viewer", "thread_viewer", "superuser")
LOGIN = "admin-login"  # 302 to the admin's login page
NOT_OFFERED = "not-offered"  # the changelist again (200, or 302 back to it), the action not run
NOT_SHOWN = "not-shown"  # a job of a thread the viewer may not see: 302 to the admin index, as if absent
BASE = "/admin/compression/compressionjob/"


def _expect(insider: object, *, viewer: object = None, staff: object = 403) -> dict[str, object]:
    """Outsiders go to the admin login, staff without the view permission get ``staff`` (403), the
    holders of both view permissions get ``insider``; the job's permission alone, ``viewer`` (default
    ``insider``)."""
    outsiders = dict.fromkeys(("anonymous", "owner", "other"), LOGIN)
    return {
        **outsiders,
        "staff": staff,
        "record_viewer": staff,
        "viewer": insider if viewer is None else viewer,
        "thread_viewer": insider,
        "superuser": insider,
    }


# (name, method, path) -> expected answer per role. Nobody may add, change or delete a job.
MATRIX: dict[tuple[str, str, str], dict[str, object]] = {
    ("changelist", "GET", BASE): _expect(200),  # the viewer's lists no job of another's thread
    ("change", "GET", BASE + "{job}/change/"): _expect(200, viewer=NOT_SHOWN),
    ("change", "POST", BASE + "{job}/change/"): _expect(403),
    ("add", "GET", BASE + "add/"): _expect(403),
    ("add", "POST", BASE + "add/"): _expect(403),
    ("delete", "GET", BASE + "{job}/delete/"): _expect(403),
    ("delete", "POST", BASE + "{job}/delete/"): _expect(403),
    # Django's history page looks the job up before it asks for the permission: a job one may not see
    # is absent to the refused staff too.
    ("history", "GET", BASE + "{job}/history/"): _expect(200, viewer=NOT_SHOWN, staff=NOT_SHOWN),
    ("delete_selected", "POST", BASE): _expect(NOT_OFFERED),  # the bulk action, as the changelist posts it
}


def test_every_job_admin_url_has_an_entry():
    names = {pattern.name for pattern in admin.site._registry[CompressionJob].get_urls() if pattern.name}
    names = {name.removeprefix("compression_compressionjob_") for name in names}
    assert names == {name for name, _method, _path in MATRIX if name != "delete_selected"}


def _with_thread_view(person):
    person.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    return person


@pytest.fixture
def people(django_user_model, user, other_user):
    def staff(name: str, *codenames: str):
        person = django_user_model.objects.create_user(name, password=f"pw-{name}-123", is_staff=True)
        person.user_permissions.set(
            Permission.objects.filter(content_type__app_label="compression", codename__in=codenames)
        )
        return person

    return {
        "anonymous": None,
        "owner": user,
        "other": other_user,
        "staff": staff("staff"),
        "record_viewer": staff("record-viewer", "view_compressionrecord"),
        "viewer": staff("viewer", "view_compressionjob"),
        "thread_viewer": _with_thread_view(staff("thread-viewer", "view_compressionjob")),
        "superuser": django_user_model.objects.create_superuser("root", password="pw-root-123"),
    }


@pytest.fixture
def job(thread, user):
    started = timezone.now() - timedelta(seconds=3)
    return CompressionJob.objects.create(
        conversation=thread,
        requested_by=user,
        trigger="manual",
        status=CompressionJob.Status.SUCCEEDED,
        started_at=started,
        finished_at=started + timedelta(seconds=2.5),
        result={"status": "completed"},
    )


def _snapshot(job: CompressionJob) -> tuple:
    job.refresh_from_db()
    return (job.status, job.error, job.result, job.finished_at, job.requested_by_id)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("name", "method", "path"), list(MATRIX))
def test_job_admin_authorization_matrix(client, people, job, role, name, method, path):
    if people[role] is not None:
        client.force_login(people[role])
    url = path.format(job=job.pk)
    before = _snapshot(job)
    if name == "delete_selected":
        response = client.post(
            url, {"action": "delete_selected", "_selected_action": [job.pk], "post": "yes"}
        )
    elif method == "POST":
        response = client.post(url, {"status": "cancelled", "error": "edited", "post": "yes"})
    else:
        response = client.get(url)
    expected = MATRIX[(name, method, path)][role]
    if expected == LOGIN:
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), response
    elif expected == NOT_SHOWN:
        assert response.status_code == 302 and response["Location"] == "/admin/", response
    elif expected == NOT_OFFERED:
        assert response.status_code in (200, 302), response.status_code
        assert "delete_selected" not in client.get(BASE).content.decode()
    else:
        assert response.status_code == expected, (role, name, method, response.status_code)
    assert CompressionJob.objects.filter(pk=job.pk).exists()
    assert _snapshot(job) == before  # a refused request leaves the job as it was


def test_the_job_list_shows_thread_asker_status_in_words_and_duration(client, people, job):
    job.conversation.title = "Quarterly report"
    job.conversation.save(update_fields=["title"])
    failed = CompressionJob.objects.create(
        conversation=job.conversation,
        trigger="bulk",
        status=CompressionJob.Status.FAILED,
        error="The thread changed while its summary was written; nothing was applied.",
    )
    client.force_login(people["thread_viewer"])
    page = client.get(BASE).content.decode()
    assert "Quarterly report" in page and ">alice<" in page
    assert "Succeeded" in page and "2.5 s" in page
    assert "Failed: The thread changed while its summary was written" in page
    assert f"{BASE}{failed.pk}/change/" in page
    assert f"{BASE}add/" not in page  # nothing to add
    detail = client.get(f"{BASE}{job.pk}/change/").content.decode()
    assert 'name="_save"' not in detail  # read-only: no save button


@pytest.mark.parametrize("model", ["compressionjob", "compressionrecord"])
def test_the_view_permission_alone_shows_only_the_holders_own_threads(
    client, django_user_model, job, user, model
):
    """A holder of the job's (or record's) view permission without ``view_conversation`` saw every
    thread's title and owner; now only the rows of their own threads."""
    from compression.models import CompressionRecord
    from conversations.services import thread_create

    job.conversation.title = "Someone else's plans"
    job.conversation.save(update_fields=["title"])
    CompressionRecord.objects.create(conversation=job.conversation, trigger="manual", file_path="x.md")
    holder = django_user_model.objects.create_user("holder", password="pw-holder-123", is_staff=True)
    holder.user_permissions.set(Permission.objects.filter(codename=f"view_{model}"))
    mine = thread_create(user=holder, agent_slug=job.conversation.agent.slug, title="My own thread")
    CompressionJob.objects.create(conversation=mine, trigger="manual")
    CompressionRecord.objects.create(conversation=mine, trigger="manual", file_path="y.md")
    client.force_login(holder)
    page = client.get(f"/admin/compression/{model}/").content.decode()
    assert "My own thread" in page and "Someone else&#x27;s plans" not in page and "alice" not in page
    holder.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    page = client.get(f"/admin/compression/{model}/").content.decode()
    assert "Someone else&#x27;s plans" in page
