"""Attachments on the chat page: the composer sends files, the transcript shows them as chips and
thumbnails, and inline media that compaction saved link to their files."""

from __future__ import annotations

import base64
import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agent_platform.workdir import workdir_for
from context_engine.compaction.media import media_path
from conversations.models import Attachment, Message
from conversations.services import NewMessage, message_append
from tests.support.files import png_bytes

pytestmark = pytest.mark.django_db


def _send(client, thread, *files, content=""):
    return client.post(
        f"/threads/{thread.thread_id}/messages",
        {"content": content, "files": list(files)},
        headers={"X-Requested-With": "fetch"},
    )


def test_the_composer_sends_files_and_the_transcript_shows_them(owner_client, thread):
    image = png_bytes()
    response = _send(
        owner_client,
        thread,
        SimpleUploadedFile("chart.png", image),
        SimpleUploadedFile("notes.md", b"# Notes\n"),
        content="Here they are",
    )
    assert response.status_code == 202, response.content
    assert Attachment.objects.filter(conversation=thread).count() == 2
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    image_path = Attachment.objects.get(name="chart.png").path
    assert f'src="/threads/{thread.thread_id}/files/{image_path}?raw=1"' in page
    assert 'alt="chart.png"' in page and "notes.md" in page and "text/markdown" in page
    assert 'id="composer-files"' in page and "js/attachments.js" in page


def test_files_alone_are_a_message(owner_client, thread):
    assert _send(owner_client, thread, SimpleUploadedFile("a.txt", b"hello")).status_code == 202
    assert Message.objects.get(conversation=thread, role="user").content == ""


def test_a_refused_file_is_a_form_error_and_nothing_is_sent(owner_client, thread, settings):
    settings.ATTACHMENT_MAX_FILE_BYTES = 100
    response = _send(owner_client, thread, SimpleUploadedFile("big.txt", b"x" * 101), content="hi")
    assert response.status_code == 413 and "big.txt is larger than" in response.content.decode()
    refused = _send(owner_client, thread, SimpleUploadedFile("x.png", b"\x7fELF" + b"\0" * 50), content="hi")
    assert (
        refused.status_code == 422
        and "x.png looks like a Linux program; it can't be attached." in refused.content.decode()
    )
    assert not Message.objects.filter(conversation=thread).exists()


def test_inline_media_saved_by_compaction_links_to_its_file(owner_client, thread):
    image = png_bytes()
    content = f'{{"chart": "data:image/png;base64,{base64.b64encode(image).decode()}"}}'
    message_append(
        conversation=thread,
        message=NewMessage(role=Message.Role.TOOL, content=content, tool_name="plot", tool_call_id="c1"),
    )
    path = media_path("image/png", hashlib.sha256(image).hexdigest())
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert "Media saved for the model" not in page  # not saved yet: no marker
    workdir_for(thread).write_bytes(path, image)
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert "Media saved for the model" in page and f"/files/{path}?raw=1" in page
