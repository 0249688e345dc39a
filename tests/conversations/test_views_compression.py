"""The page's compression status: fragments from events, and what a reload shows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations.models import AgentRun
from tests.conversations.page_support import file_url

pytestmark = pytest.mark.django_db


def test_compression_fragment_renders_an_event(owner_client, thread):
    url = reverse("conversations:fragment-compression", kwargs={"thread_id": thread.thread_id})
    html = owner_client.get(
        url, {"status": "completed", "level": "summary", "before_tokens": 90000, "after_tokens": 12000}
    ).content.decode()
    assert "Compression completed (summary): 90K → 12K tokens" in html
    html = owner_client.get(url, {"status": "failed", "error": "<b>boom</b>"}).content.decode()
    assert "Compression failed:" in html and "&lt;b&gt;boom&lt;/b&gt;" in html


@pytest.mark.parametrize("file_path", ["\n", "../../etc/passwd", "/etc/passwd"])
def test_compression_fragment_drops_a_file_path_outside_the_workdir(owner_client, thread, file_path):
    url = reverse("conversations:fragment-compression", kwargs={"thread_id": thread.thread_id})
    response = owner_client.get(url, {"status": "completed", "level": "summary", "file_path": file_path})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Compression completed (summary)" in html and "History saved to" not in html
    history = "outputs/conversation_history/s1.md"
    html = owner_client.get(url, {"status": "completed", "file_path": history}).content.decode()
    assert f'href="{file_url(thread, history)}"' in html


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
    status = status[: status.index("</div>")]
    assert "Compression completed (summary)" in status
    assert "session_abc.md" in status


def test_the_page_shows_a_compression_under_way_after_a_reload(owner_client, thread):
    from django.core.cache import cache

    from conversations.selectors import COMPRESSING_KEY

    cache.set(COMPRESSING_KEY.format(thread_id=thread.thread_id), "manual", 60)
    try:
        page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    finally:
        cache.delete(COMPRESSING_KEY.format(thread_id=thread.thread_id))
    assert 'id="compression-status" class="compression-status" data-status="started"' in page
    assert 'data-busy="true"' in page
