"""The "N earlier messages are not shown" note counts the current branch only (issue 26 follow-up):
rows an edit or a regeneration replaced are earlier versions, browsed in place, not hidden messages."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations.models import AgentRun, Message, MessageFork
from conversations.selectors import MESSAGE_PAGE_MAX
from conversations.services import message_intake

pytestmark = pytest.mark.django_db


def _page(client, thread) -> str:
    return client.get(
        reverse("conversations:thread-detail", kwargs={"thread_id": thread.thread_id})
    ).content.decode()


def test_a_short_thread_with_replaced_versions_has_no_earlier_note(
    owner_client, thread, user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = message_intake(thread_id=thread.thread_id, user=user, content="Which museums?").message
    for url, body in (
        (f"/api/threads/{thread.thread_id}/messages/{first.pk}/edit", {"content": "Which beaches?"}),
        (f"/api/threads/{thread.thread_id}/regenerate", {}),
    ):
        with django_capture_on_commit_callbacks(execute=True):
            assert owner_client.post(url, body, content_type="application/json").status_code == 202
    assert thread.messages.count() == 5 and MessageFork.objects.filter(conversation=thread).count() == 2
    html = _page(owner_client, thread)
    assert 'id="transcript-earlier"' not in html and "earlier message" not in html


def test_a_long_threads_note_counts_only_the_current_branch(owner_client, user, thread):
    total = MESSAGE_PAGE_MAX + 5
    rows = Message.objects.bulk_create(
        Message(conversation=thread, seq=seq, role="user", content=f"message {seq}")
        for seq in range(1, total + 1)
    )
    run = AgentRun.objects.create(conversation=thread, kind=AgentRun.Kind.CHAT, input_message=rows[3])
    MessageFork.objects.create(  # an edit of message 1 replaced rows 1-3
        conversation=thread,
        kind=MessageFork.Kind.EDIT,
        message=rows[0],
        run=run,
        hidden_from_seq=1,
        hidden_to_seq=4,
        checkpoint_id="c",
        created_by=user,
    )
    html = _page(owner_client, thread)
    # 502 current rows, the newest 500 shown: 2 earlier ones (rows 4 and 5), not 5.
    assert 'id="message-6"' in html and 'id="message-5"' not in html
    assert "2 earlier messages are not shown." in html
