"""Attachments refused when picked: the composer's check names every refused file at once (by the rules
Send applies, nothing written), and Send itself names every refused file in its one error."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from conversations.models import Attachment, Message

pytestmark = pytest.mark.django_db

PROGRAM = b"\x7fELF\x02\x01\x01" + b"\0" * 300


def _check(client, thread, *files):
    return client.post(f"/threads/{thread.thread_id}/attachments/check", {"files": list(files)})


def test_the_check_names_every_refused_file_at_once_and_writes_nothing(owner_client, thread):
    response = _check(
        owner_client,
        thread,
        SimpleUploadedFile("photo.png", PROGRAM),
        SimpleUploadedFile("empty.txt", b""),
        SimpleUploadedFile("notes.md", b"# Notes\n"),
    )
    assert response.status_code == 200
    refused = response.json()["refused"]
    assert [r["index"] for r in refused] == [0, 1]
    assert "photo.png looks like a Linux program" in refused[0]["reason"]
    assert refused[1]["reason"] == "empty.txt is empty."
    assert not Message.objects.filter(conversation=thread).exists()
    assert not Attachment.objects.exists()


def test_the_check_says_when_too_many_files_are_picked_and_which_are_refused(owner_client, thread, settings):
    settings.ATTACHMENT_MAX_FILES = 2
    files = [SimpleUploadedFile("e.txt", b""), *(SimpleUploadedFile(f"{i}.txt", b"hi") for i in range(2))]
    refused = _check(owner_client, thread, *files).json()["refused"]
    assert [r["index"] for r in refused] == [None, 0]
    assert refused[0]["reason"] == "At most 2 files can be attached to one message."
    assert refused[1]["reason"] == "e.txt is empty."


def test_files_that_may_go_get_an_empty_answer(owner_client, thread):
    response = _check(owner_client, thread, SimpleUploadedFile("notes.md", b"# Notes\n"))
    assert response.json() == {"refused": []}


def test_send_names_every_refused_file_in_its_one_error(owner_client, thread):
    response = owner_client.post(
        f"/api/threads/{thread.thread_id}/messages/upload",
        {
            "content": "look",
            "files": [SimpleUploadedFile("photo.png", PROGRAM), SimpleUploadedFile("e.txt", b"")],
        },
    )
    assert response.status_code == 422, response.content
    message = response.json()["message"]
    assert "photo.png looks like a Linux program" in message and "e.txt is empty." in message
    assert not Message.objects.filter(conversation=thread).exists()
