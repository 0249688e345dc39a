"""Someone who may read a thread but does not own it (a holder of ``conversations.view_conversation``)
sees what the owner sees, without the controls they cannot use: no composer, Stop, answer form,
Rename, Delete, Pin, "Remove from queue", "Compress context" or "Undo this summary" (each answers 404
for them). The owner's page keeps every control."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from conversations.models import AgentRun
from conversations.services import NewMessage, message_append
from tests.conversations.page_support import usage_at, write_token_usage

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("keep_four")]

# Markers of each control in the rendered page.
CONTROLS = {
    "composer": 'id="composer"',
    "rename": 'class="rename"',
    "delete": "/delete",
    "pin": 'class="pin-toggle',
    "compress": 'id="compress-button"',
    "undo": 'id="undo-button"',
}


@pytest.fixture
def viewer_client(staff_user):
    """A second browser (``owner_client`` is pytest-django's ``client``), logged in as a viewer."""
    staff_user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    viewer = Client()
    viewer.force_login(staff_user)
    return viewer


def _page(client, thread) -> str:
    return client.get(
        reverse("conversations:thread-detail", kwargs={"thread_id": thread.thread_id})
    ).content.decode()


def _summarized_thread(client, thread):
    """A thread at 93% of its trigger after a summary it could undo, with messages in the transcript."""
    from tests.conversations.test_context_panel import _seed_thread

    _seed_thread(thread, turns=4)
    assert client.post(f"/api/threads/{thread.thread_id}/compress?wait=true").status_code == 200
    write_token_usage(thread, usage_at(0.93))


def test_the_owner_sees_every_control(owner_client, thread):
    _summarized_thread(owner_client, thread)
    html = _page(owner_client, thread)
    assert {name for name, marker in CONTROLS.items() if marker in html} == set(CONTROLS)
    assert 'id="read-only"' not in html


def test_a_viewer_reads_the_thread_without_its_controls(owner_client, viewer_client, thread, user):
    _summarized_thread(owner_client, thread)
    response = viewer_client.get(
        reverse("conversations:thread-detail", kwargs={"thread_id": thread.thread_id})
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert {name for name, marker in CONTROLS.items() if marker in html} == set()
    assert f"You are reading {user.username}'s thread" in html
    # What the owner sees is all there: the meter, its hint, the card and the memory panel.
    assert 'id="compression-hint"' in html and 'data-outcome="summarized"' in html
    assert 'data-summary="true"' in html
    # The user's messages are the owner's, not "You".
    assert f'<span class="author">{user.username}</span>' in html
    # The controls would not work for them anyway.
    assert viewer_client.post(f"/api/threads/{thread.thread_id}/compress/undo").status_code == 404


@pytest.mark.parametrize("who", ["owner", "viewer"])
def test_stop_and_dequeue_in_the_fragments_are_the_owners_alone(request, who, thread):
    client = request.getfixturevalue(f"{who}_client")
    running = AgentRun.objects.create(conversation=thread, status=AgentRun.Status.RUNNING)
    queued = AgentRun.objects.create(conversation=thread, status=AgentRun.Status.QUEUED)
    message_append(conversation=thread, message=NewMessage(role="user", content="first", run=running))
    message_append(conversation=thread, message=NewMessage(role="user", content="second", run=queued))
    kwargs = {"thread_id": thread.thread_id}
    state = client.get(reverse("conversations:fragment-state", kwargs=kwargs)).content.decode()
    messages = client.get(reverse("conversations:fragment-messages", kwargs=kwargs)).content.decode()
    assert "The agent is working" in state and "second" in messages
    assert ('id="stop-form"' in state) == ('class="dequeue"' in messages) == (who == "owner")


@pytest.mark.parametrize("who", ["owner", "viewer"])
def test_only_the_owner_can_answer_the_agents_question(request, who, thread):
    client = request.getfixturevalue(f"{who}_client")
    AgentRun.objects.create(conversation=thread, status=AgentRun.Status.INTERRUPTED)
    kwargs = {"thread_id": thread.thread_id}
    state = client.get(reverse("conversations:fragment-state", kwargs=kwargs)).content.decode()
    assert "The agent asks:" in state
    assert ('id="answer-form"' in state) == (who == "owner")
    assert ("Waiting for the thread's owner to answer." in state) == (who == "viewer")
