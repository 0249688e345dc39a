"""The page's compression status: fragments from events, and what a reload shows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations.models import AgentRun
from tests.conversations.page_support import file_url

pytestmark = pytest.mark.django_db


def test_compression_fragment_renders_the_transient_states_of_an_event(owner_client, thread):
    url = reverse("compression:fragment-compression", kwargs={"thread_id": thread.thread_id})
    html = owner_client.get(url, {"status": "started"}).content.decode()
    assert 'data-status="started"' in html and "Compressing context" in html
    html = owner_client.get(url, {"status": "failed", "error": "<b>boom</b>"}).content.decode()
    assert "Compression failed" in html and "&lt;b&gt;boom&lt;/b&gt;" in html
    # A completed compression is shown from its record (with the state), never from the query string.
    html = owner_client.get(
        url, {"status": "completed", "level": "summary", "before_tokens": 90000, "after_tokens": 12000}
    ).content.decode()
    assert 'data-status="none"' in html and "90K" not in html


def test_the_card_drops_a_recorded_file_path_outside_the_workdir(owner_client, thread):
    from compression.models import CompressionRecord

    for bad in ("\n", "../../etc/passwd", "/etc/passwd"):
        CompressionRecord.objects.create(
            conversation=thread, trigger="manual", level="summary", status="completed", file_path=bad
        )
        page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
        card = page[
            page.index('id="compression-status"') : page.index(
                "</section>", page.index('id="compression-status"')
            )
        ]
        assert "Summarized" in card and "History file" not in card, bad
    history = "outputs/conversation_history/s1.md"
    CompressionRecord.objects.create(
        conversation=thread, trigger="manual", level="summary", status="completed", file_path=history
    )
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert f'href="{file_url(thread, history)}"' in page


def test_after_a_reload_the_page_shows_the_newest_compression_whatever_its_trigger(owner_client, thread):
    """A manual compression after a run's automatic one is what the status line shows on load."""
    from compression.models import CompressionRecord

    run = AgentRun.objects.create(conversation=thread, status="succeeded")
    run.events = [{"type": "compression", "status": "completed", "level": "compaction", "before_tokens": 9}]
    run.save()
    CompressionRecord.objects.create(
        conversation=thread,
        run=run,
        trigger="auto",
        level="compaction",
        status="completed",
        before_tokens=9000,
        after_tokens=8000,
    )
    CompressionRecord.objects.create(
        conversation=thread,
        trigger="manual",
        level="summary",
        status="completed",
        before_tokens=8000,
        after_tokens=1200,
        file_path="outputs/conversation_history/session_abc.md",
    )
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    status = page[page.index('id="compression-status"') :]
    status = status[: status.index("</section>")]
    assert "Summarized" in status and "from 8K to 1.2K tokens" in status
    assert "session_abc.md" in status


def test_the_page_shows_a_compression_under_way_after_a_reload(owner_client, thread):
    from django.core.cache import cache

    from conversations.selectors import COMPRESSING_KEY

    cache.set(COMPRESSING_KEY.format(thread_id=thread.thread_id), "manual", 60)
    try:
        page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    finally:
        cache.delete(COMPRESSING_KEY.format(thread_id=thread.thread_id))
    assert 'id="compression-status" class="compression-status compression-card" data-status="started"' in page
    assert 'data-busy="true"' in page
