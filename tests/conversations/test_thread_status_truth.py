"""Status tells the truth (issue 26, item 8): a queued message removed before it started does not turn
the finished reply before it into "Stopped"; a title set by the first message or a rename reaches open
pages as an event; renaming to empty restores the automatic title."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from conversations import events
from conversations.models import AgentRun
from conversations.selectors import thread_busy_flags
from conversations.services import message_intake, run_cancel, thread_create, thread_rename

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    events_sent: list[dict] = []
    monkeypatch.setattr(events, "_send", lambda thread_id, event, **_: events_sent.append(event))
    return events_sent


def _succeed(run: AgentRun) -> None:
    now = timezone.now()
    AgentRun.objects.filter(pk=run.pk).update(
        status=AgentRun.Status.SUCCEEDED, started_at=now, finished_at=now
    )


def test_a_reply_that_finished_is_not_stopped_after_the_next_message_leaves_the_queue(
    owner_client, thread, user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        first = message_intake(thread_id=thread.thread_id, user=user, content="hello").run
        second = message_intake(thread_id=thread.thread_id, user=user, content="and then?").run
    run_cancel(thread_id=thread.thread_id, user=user, run_id=second.pk)  # "Remove from queue"
    _succeed(first)

    assert thread_busy_flags(conversation=thread)["latest_run"].pk == first.pk
    page = owner_client.get(reverse("conversations:thread-detail", kwargs={"thread_id": thread.thread_id}))
    body = page.content.decode()
    assert 'data-status="succeeded"' in body and "Stopped." not in body
    api = owner_client.get(f"/api/threads/{thread.thread_id}/state").json()
    assert api["latest_run"]["id"] == first.pk


def test_a_run_stopped_midway_still_reads_stopped(
    owner_client, thread, user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        run = message_intake(thread_id=thread.thread_id, user=user, content="hello").run
    now = timezone.now()
    AgentRun.objects.filter(pk=run.pk).update(
        status=AgentRun.Status.CANCELLED, started_at=now, finished_at=now
    )
    page = owner_client.get(reverse("conversations:thread-detail", kwargs={"thread_id": thread.thread_id}))
    assert "Stopped. Retry, or send a message to go on." in page.content.decode()


def test_the_first_message_names_the_thread_live(user, agent, sent, django_capture_on_commit_callbacks):
    thread = thread_create(user=user, agent_slug=agent.slug)
    with django_capture_on_commit_callbacks(execute=True):
        message_intake(thread_id=thread.thread_id, user=user, content="Plan a weekend in Porto")
        message_intake(thread_id=thread.thread_id, user=user, content="Something else")
    titles = [event for event in sent if event["type"] == events.TITLE]
    assert titles == [{"type": events.TITLE, "title": "Plan a weekend in Porto"}]


def test_renaming_to_empty_restores_the_automatic_title_on_the_page_and_the_api(
    owner_client, thread, user, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        message_intake(thread_id=thread.thread_id, user=user, content="\n Lisbon   by train\nmore")
    rename = reverse("conversations:thread-rename", kwargs={"thread_id": thread.thread_id})
    with django_capture_on_commit_callbacks(execute=True):  # the event goes out on commit
        assert owner_client.post(rename, {"title": "   "}).status_code == 302
    thread.refresh_from_db()
    assert thread.title == "Lisbon by train"
    assert {"type": events.TITLE, "title": "Lisbon by train"} in sent

    thread_rename(thread_id=thread.thread_id, user=user, title="Mine")
    response = owner_client.patch(
        f"/api/threads/{thread.thread_id}", {"title": ""}, content_type="application/json"
    )
    assert response.status_code == 200 and response.json()["title"] == "Lisbon by train"


def test_renaming_an_empty_thread_to_empty_lets_its_first_message_name_it(
    user, agent, django_capture_on_commit_callbacks
):
    thread = thread_create(user=user, agent_slug=agent.slug, title="Draft")
    assert thread_rename(thread_id=thread.thread_id, user=user, title="").title == ""
    with django_capture_on_commit_callbacks(execute=False):
        message_intake(thread_id=thread.thread_id, user=user, content="Budget review")
    thread.refresh_from_db()
    assert thread.title == "Budget review"
