"""Issue 39 item 9: a thread over 500 messages loads its earlier messages: the page says how many are
not shown and offers them; the fragment before the first shown returns the page before it and the line
that says how many remain (none: hidden)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations.models import Message
from conversations.selectors import MESSAGE_PAGE_MAX

pytestmark = pytest.mark.django_db


def _seed(thread, count: int) -> None:
    Message.objects.bulk_create(
        Message(
            conversation=thread, seq=seq, role="user" if seq % 2 else "assistant", content=f"message {seq}"
        )
        for seq in range(1, count + 1)
    )


def test_a_long_thread_loads_its_earlier_messages_page_by_page(owner_client, thread):
    total = MESSAGE_PAGE_MAX * 2 + 20  # three pages: 20, 500, 500
    _seed(thread, total)
    page = owner_client.get(reverse("conversations:thread-detail", args=[thread.thread_id])).content.decode()
    first_shown = total - MESSAGE_PAGE_MAX + 1
    assert f'id="message-{first_shown}"' in page and f'id="message-{first_shown - 1}"' not in page
    assert f"{first_shown - 1} earlier messages are not shown." in page
    assert f'id="load-earlier" data-before="{first_shown}"' in page

    url = reverse("conversations:fragment-messages", args=[thread.thread_id])
    middle = owner_client.get(url, {"before": first_shown}).content.decode()
    assert f'id="message-{first_shown - 1}"' in middle and 'id="message-21"' in middle
    assert 'id="message-20"' not in middle and f'id="message-{first_shown}"' not in middle
    assert "20 earlier messages are not shown." in middle and 'data-before="21"' in middle

    oldest = owner_client.get(url, {"before": 21}).content.decode()
    assert 'id="message-1"' in oldest and 'id="message-20"' in oldest
    assert '<p id="transcript-earlier" hidden></p>' in oldest  # nothing earlier remains


def test_a_nonsense_before_reads_as_the_start(owner_client, thread):
    _seed(thread, 3)
    url = reverse("conversations:fragment-messages", args=[thread.thread_id])
    response = owner_client.get(url, {"before": "x"})
    assert response.status_code == 200 and 'id="message-1"' not in response.content.decode()
