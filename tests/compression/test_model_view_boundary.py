"""Issue 26, item 7: where the model's view begins. After a summary (the real OpenAI client against
the local OpenAI-protocol stub), the transcript marks the first message the model reads word for word,
numbers messages as the memory panel does, the memory panel shows the summary as Markdown without its
model-facing wrapper, and the history file reads as a conversation with its raw forms a click away."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from compression.models import CompressionRecord

pytestmark = pytest.mark.django_db


def _page(client, thread) -> str:
    return client.get(reverse("conversations:thread-detail", args=[thread.thread_id])).content.decode()


def test_the_transcript_marks_where_the_models_word_for_word_view_begins(client, summarized_thread):
    record = CompressionRecord.objects.get(conversation=summarized_thread, status="completed")
    folded = record.compressed_messages
    page = _page(client, summarized_thread)
    assert page.count('id="view-boundary"') == 1
    item = re.search(r'<li class="message[^"]*" id="message-(\d+)"[^>]*>\s*<div class="view-boundary"', page)
    assert item and int(item.group(1)) == folded + 1
    assert f"a summary of #1–#{folded}." in page
    assert f"(#1–#{folded})" in page  # the memory panel counts the same messages
    assert re.search(rf'href="#message-{folded + 1}"[^>]*>#{folded + 1}</a>', page)
    # The fragment a compression re-renders carries the marker too; new messages alone do not move it.
    url = reverse("conversations:fragment-messages", args=[summarized_thread.thread_id])
    assert 'id="view-boundary"' in client.get(url, {"after": 0, "boundary": 1}).content.decode()
    assert 'id="view-boundary"' not in client.get(url, {"after": 0}).content.decode()


def test_the_memory_panel_shows_the_summary_as_markdown_without_its_wrapper(client, summarized_thread):
    page = _page(client, summarized_thread)
    panel = page[page.index('id="memory-panel"') :]
    assert "<h2>SESSION INTENT</h2>" in panel
    assert "&lt;summary&gt;" not in panel and "You are in the middle of a conversation" not in panel


def test_the_history_file_reads_as_a_conversation_with_its_raw_forms_a_click_away(client, summarized_thread):
    path = CompressionRecord.objects.get(conversation=summarized_thread, status="completed").file_path
    url = reverse("conversations:workdir-file", args=[summarized_thread.thread_id, path])
    page = client.get(url).content.decode()
    assert 'id="history-read"' in page and "&lt;message" not in page
    assert "Question 0: what does document 0 say about compression?" in page
    assert 'href="?lines=1"' in page and 'href="?raw=1"' in page
    assert 'id="L3"' in page  # pointers still land on their line
    lines = client.get(url, {"lines": 1}).content.decode()
    assert 'id="history-read"' not in lines and "&lt;message type=&quot;human&quot;&gt;" in lines
    raw = b"".join(client.get(url, {"raw": 1}).streaming_content).decode()
    assert '<message type="human">' in raw
