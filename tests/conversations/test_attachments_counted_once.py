"""A file counts once against the thread's attachment-size limit (issue 26 follow-up): an edit keeps
its message's files as new rows naming the same stored file, and sending the same file again stores
nothing new, so neither may fill the thread's quota."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template.defaultfilters import filesizeformat

from conversations.models import Attachment

pytestmark = pytest.mark.django_db


@pytest.fixture
def upload(django_capture_on_commit_callbacks):
    def post(client, thread, *files):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(
                f"/api/threads/{thread.thread_id}/messages/upload", {"files": list(files), "content": "see"}
            )

    return post


def test_an_edits_copied_attachments_do_not_count_twice(
    owner_client, thread, settings, upload, django_capture_on_commit_callbacks
):
    settings.ATTACHMENT_MAX_THREAD_BYTES = 1500
    sent = upload(owner_client, thread, SimpleUploadedFile("a.txt", b"a" * 900))
    assert sent.status_code == 202, sent.content
    with django_capture_on_commit_callbacks(execute=True):
        edited = owner_client.post(
            f"/api/threads/{thread.thread_id}/messages/{sent.json()['message']['id']}/edit",
            {"content": "see this instead"},
            content_type="application/json",
        )
    assert edited.status_code == 202, edited.content
    rows = Attachment.objects.filter(conversation=thread)
    assert rows.count() == 2 and len({row.path for row in rows}) == 1  # two rows, one stored file
    # 900 bytes are stored: 500 more fit under 1500 (counting the copy, 1800 would refuse them).
    assert upload(owner_client, thread, SimpleUploadedFile("b.txt", b"b" * 500)).status_code == 202
    full = upload(owner_client, thread, SimpleUploadedFile("c.txt", b"c" * 101))
    assert full.status_code == 413 and full.json()["code"] == "thread_attachments_full"
    assert f"({filesizeformat(1400)} used)" in full.json()["message"]


def test_the_same_file_sent_again_counts_once(owner_client, thread, settings, upload):
    settings.ATTACHMENT_MAX_THREAD_BYTES = 1000
    same = b"x" * 600
    assert upload(owner_client, thread, SimpleUploadedFile("x.txt", same)).status_code == 202
    again = upload(owner_client, thread, SimpleUploadedFile("x.txt", same))
    assert again.status_code == 202, again.content  # stored once: 600 of 1000 used
    # Twice in one request is one file too; the same bytes under another name are another stored file.
    assert (
        upload(owner_client, thread, *(SimpleUploadedFile("x.txt", same) for _ in range(2))).status_code
        == 202
    )
    other = upload(owner_client, thread, SimpleUploadedFile("y.txt", same))
    assert other.status_code == 413 and other.json()["code"] == "thread_attachments_full"
    assert Attachment.objects.filter(conversation=thread, path__endswith="y.txt").count() == 0
