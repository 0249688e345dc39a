"""Exporting a thread as Markdown and JSON: the whole transcript in reading order, attachments with
their SHA-256, compression records; the access rule of reading the thread."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.contrib.auth.models import Permission

from compression.models import CompressionRecord
from conversations.models import Message
from conversations.services import message_pin

pytestmark = pytest.mark.django_db


@pytest.fixture
def exported(client, user, thread, django_capture_on_commit_callbacks):
    """A thread with a run (user message with a file, offline reply), a pin and a compression record."""
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages/upload",
            {"content": "Read ```this``` please", "files": [_file()]},
        )
    assert response.status_code == 202, response.content
    first = Message.objects.get(conversation=thread, seq=1)
    message_pin(thread_id=thread.thread_id, message_id=first.pk, user=user)
    CompressionRecord.objects.create(
        conversation=thread,
        trigger="manual",
        level="summary",
        status="completed",
        before_tokens=900,
        after_tokens=300,
        compressed_messages=4,
        file_path="/conversation_history/1.md",
    )
    return thread


def _file():
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("notes.txt", b"hello notes\n", content_type="text/plain")


def test_json_export_holds_the_transcript_attachments_and_records(client, exported):
    response = client.get(f"/api/threads/{exported.thread_id}/export.json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert (
        response["Content-Disposition"].startswith("attachment;")
        and ".json" in response["Content-Disposition"]
    )
    data = json.loads(response.content)
    assert data["thread"]["title"] and data["thread"]["agent"]["slug"] == "test-agent"
    roles = [m["role"] for m in data["messages"]]
    assert roles == ["user", "assistant"]
    user_message = data["messages"][0]
    assert user_message["pinned"] is True and "```this```" in user_message["content"]
    [attachment] = user_message["attachments"]
    assert attachment["name"] == "notes.txt"
    assert attachment["sha256"] == hashlib.sha256(b"hello notes\n").hexdigest()
    assert attachment["size"] == len(b"hello notes\n")
    [record] = data["compression_records"]
    assert (record["level"], record["before_tokens"], record["after_tokens"]) == ("summary", 900, 300)
    assert data["messages"][1]["content"] == Message.objects.get(conversation=exported, seq=2).content


def test_markdown_export_reads_as_a_conversation(client, exported):
    response = client.get(f"/api/threads/{exported.thread_id}/export.md")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/markdown")
    text = response.content.decode()
    assert text.startswith(f"# {exported.title}\n")
    assert "## 1. User (pinned)" in text and "## 2. Assistant" in text
    assert "Read ```this``` please" in text
    assert hashlib.sha256(b"hello notes\n").hexdigest() in text
    assert "| manual | summary | completed | 900 → 300 | 4 | /conversation_history/1.md |" in text


def test_markdown_export_fences_tool_output_past_its_own_backticks(client, user, thread):
    Message.objects.create(
        conversation=thread,
        seq=1,
        role="assistant",
        content="",
        lc_message_id="a1",
        tool_calls=[{"name": "read_file", "args": {"path": "x.md"}, "id": "c1"}],
    )
    Message.objects.create(
        conversation=thread,
        seq=2,
        role="tool",
        content="````\ninside\n````",
        tool_name="read_file",
        tool_call_id="c1",
        lc_message_id="t1",
    )
    client.force_login(user)
    text = client.get(f"/api/threads/{thread.thread_id}/export.md").content.decode()
    assert "## 2. Tool result: read_file" in text
    assert "`````\n````\ninside\n````\n`````" in text
    assert "Called `read_file` with:" in text and '"path": "x.md"' in text


def test_export_follows_the_read_rule(client, user, other_user, thread):
    url = f"/api/threads/{thread.thread_id}/export.json"
    assert client.get(url).status_code == 401
    client.force_login(other_user)
    response = client.get(url)
    assert response.status_code == 404 and response.json()["code"] == "thread_not_found"
    other_user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(type(other_user).objects.get(pk=other_user.pk))
    assert client.get(url).status_code == 200
    assert client.get(f"/api/threads/{thread.thread_id}/export.md").status_code == 200


def test_the_thread_page_links_both_exports(client, user, thread):
    client.force_login(user)
    page = client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert f'href="/api/threads/{thread.thread_id}/export.md"' in page
    assert f'href="/api/threads/{thread.thread_id}/export.json"' in page


def test_a_deleted_thread_cannot_be_exported(client, user, thread):
    thread.status = "deleted"
    thread.save()
    client.force_login(user)
    assert client.get(f"/api/threads/{thread.thread_id}/export.md").status_code == 404
