"""Issue 26, item 3: pins keep their promise. Pinning a message the summary already folded brings it
back into the model's view, word for word right after the summary, within the pin cap (seen in the
request the real OpenAI client sends to the local OpenAI-protocol stub); while a run is under way the
pin is refused with a reason and nothing changes. The memory panel names the pinned message and does
not count it as folded; a viewer sees the pin marker."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from context_engine.state import PINNED_IDS_KEY, SUMMARY_EVENT_KEY
from conversations.models import AgentRun, MessagePin
from conversations.services import message_intake
from tests.compression._threads import repository_for

pytestmark = pytest.mark.django_db


def _pin(client, thread, message):
    return client.post(f"/api/threads/{thread.thread_id}/messages/{message.pk}/pin")


def _memory(client, thread) -> str:
    html = client.get(reverse("conversations:thread-detail", args=[thread.thread_id])).content.decode()
    html = re.sub(r"\s+", " ", html)
    return html[html.index('id="memory-panel"') :]


def test_pinning_a_folded_message_brings_it_back_after_the_summary(
    client, user, summarized_thread, openai_stub, django_capture_on_commit_callbacks
):
    thread = summarized_thread
    first = thread.messages.get(seq=1)
    folded_before = re.search(r"stands for (\d+) transcript", _memory(client, thread)).group(1)

    response = _pin(client, thread, first)

    assert response.status_code == 200, response.content
    event = repository_for(thread).get_values()[SUMMARY_EVENT_KEY]
    assert event[PINNED_IDS_KEY] == [first.lc_message_id]
    memory = _memory(client, thread)
    assert 'id="memory-pinned"' in memory and 'href="#message-1">#1</a>' in memory
    assert f"stands for {int(folded_before) - 1} transcript" in memory

    openai_stub.reply("Noted.")
    with django_capture_on_commit_callbacks(execute=True):
        run = message_intake(thread_id=thread.thread_id, user=user, content="Go on.").run
    run.refresh_from_db()
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    sent = openai_stub.requests[-1]["messages"]
    assert sent[1]["content"].startswith("You are in the middle of a conversation that has been summarized.")
    assert sent[2] == {"role": "user", "content": first.content}  # word for word, right after the summary


def test_pinning_a_folded_message_during_a_run_is_refused_with_a_reason(client, summarized_thread):
    thread = summarized_thread
    before = repository_for(thread).get_values()[SUMMARY_EVENT_KEY]
    AgentRun.objects.create(conversation=thread, status=AgentRun.Status.RUNNING)

    response = _pin(client, thread, thread.messages.get(seq=1))

    assert response.status_code == 409 and response.json()["code"] == "pin_folded_busy"
    assert "already folded into the summary" in response.json()["message"]
    assert not MessagePin.objects.filter(message__conversation=thread).exists()
    assert repository_for(thread).get_values()[SUMMARY_EVENT_KEY] == before


def test_a_viewer_sees_the_pin_marker(client, summarized_thread, django_user_model):
    from django.contrib.auth.models import Permission

    assert _pin(client, summarized_thread, summarized_thread.messages.get(seq=1)).status_code == 200
    viewer = django_user_model.objects.create_user("viewer", "v@example.com", "pw")
    viewer.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(viewer)
    page = client.get(
        reverse("conversations:thread-detail", args=[summarized_thread.thread_id])
    ).content.decode()
    assert page.count('class="pin-marker small"') == 1 and "pin-toggle" not in page
