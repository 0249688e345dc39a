"""Attachments: limits and type checks by content, safe names, what the model is sent, byte-exact files."""

from __future__ import annotations

import hashlib
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agent_platform.workdir import workdir_for
from conversations.attachments import Kind, ModelAttachment, model_blocks, safe_name, sniff, upload_path
from conversations.models import Attachment, Message
from tests.support.files import pdf_bytes, png_bytes

pytestmark = pytest.mark.django_db


ELF = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 200


@pytest.fixture
def upload(django_capture_on_commit_callbacks):
    """Post files as multipart; the run it queues executes before this returns."""

    def post(client, thread, *files, content="see attached", **extra):
        data = {"files": list(files), "content": content, **extra}
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(f"/api/threads/{thread.thread_id}/messages/upload", data)

    return post


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def model_text(model) -> str:
    human = [m for m in model.calls[0] if m.type == "human"][-1]
    return str(human.content)


def test_a_small_text_file_is_inline_and_saved_byte_for_byte(owner_client, thread, scripted_model, upload):
    model = scripted_model("Noted.")
    body = b"# Notes\n\nDeploy on Friday, ticket OPS-1234.\n"
    response = upload(owner_client, thread, SimpleUploadedFile("notes.md", body))
    assert response.status_code == 202, response.content
    [attachment] = response.json()["message"]["attachments"]
    assert attachment["name"] == "notes.md" and attachment["mime_type"] == "text/markdown"
    assert attachment["sha256"] == sha(body) and attachment["size"] == len(body)
    assert attachment["path"] == f"uploads/{sha(body)[:12]}-notes.md"
    assert workdir_for(thread).read_bytes(attachment["path"]) == body
    sent = model_text(model)
    assert "see attached" in sent and "ticket OPS-1234" in sent and '<attachment name="notes.md"' in sent
    served = owner_client.get(attachment["url"] + "?raw=1")
    assert (
        served.status_code == 200
        and b"".join(served.streaming_content if served.streaming else [served.content]) == body
    )


def test_a_large_log_is_a_note_with_a_preview_readable_in_full(
    owner_client, thread, scripted_model, settings, upload
):
    model = scripted_model("Read it.")
    body = "".join(
        f"2026-11-30 10:{i % 60:02d} INFO request {i} served in {i % 97} ms\n" for i in range(6000)
    )
    data = body.encode()
    assert len(data) > 300_000
    response = upload(owner_client, thread, SimpleUploadedFile("server.log", data))
    assert response.status_code == 202, response.content
    [attachment] = response.json()["message"]["attachments"]
    sent = model_text(model)
    assert "[Attachment saved]" in sent and f"SHA-256: {sha(data)}" in sent
    assert f"Read the full text with read_file: {attachment['path']}" in sent
    assert "request 0 served" in sent and len(sent) < 10_000  # a preview, not the file
    assert sha(workdir_for(thread).read_bytes(attachment["path"])) == sha(data)
    assert workdir_for(thread).read_text(attachment["path"]) == body


def test_a_pdf_is_kept_whole_and_its_text_extracted(owner_client, thread, scripted_model, upload):
    model = scripted_model("Read it.")
    data = pdf_bytes("Quarterly report. Revenue grew 12 percent in region EMEA-7.")
    response = upload(owner_client, thread, SimpleUploadedFile("report.pdf", data))
    assert response.status_code == 202, response.content
    [attachment] = response.json()["message"]["attachments"]
    assert attachment["mime_type"] == "application/pdf" and attachment["kind"] == "pdf"
    workdir = workdir_for(thread)
    assert workdir.read_bytes(attachment["path"]) == data
    assert "Revenue grew 12 percent in region EMEA-7" in workdir.read_text(attachment["path"] + ".txt")
    sent = model_text(model)
    assert "EMEA-7" in sent and f"read_file: {attachment['path']}.txt" in sent


def test_an_image_is_a_note_for_a_model_without_vision(owner_client, thread, scripted_model, upload):
    model = scripted_model("I cannot see it.")
    data = png_bytes()
    response = upload(owner_client, thread, SimpleUploadedFile("chart.png", data))
    assert response.status_code == 202, response.content
    sent = model_text(model)
    assert "image/png" in sent and "cannot see images" in sent and "base64" not in sent


def test_an_image_is_an_image_block_for_a_vision_model():
    data = png_bytes()
    item = ModelAttachment(
        "c.png", "uploads/x-c.png", "image/png", Kind.IMAGE, len(data), sha(data), data=data
    )
    blocks = model_blocks(item, inline_max_chars=100, preview_tokens=50, vision=True)
    assert blocks[1]["type"] == "image_url"
    assert blocks[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "uploads/x-c.png" in blocks[0]["text"]


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("photo.png", ELF, "attachment_refused"),  # a renamed executable
        ("notes.txt", ELF, "attachment_refused"),
        ("archive.txt", b"PK\x03\x04" + b"\x00" * 100, "attachment_refused"),
        ("binary.txt", b"abc\x00def", "attachment_refused"),
        ("empty.txt", b"", "attachment_refused"),
    ],
)
def test_files_are_checked_by_content_not_by_name(owner_client, thread, name, data, code, upload):
    response = upload(owner_client, thread, SimpleUploadedFile(name, data))
    assert response.status_code == 422, response.content
    assert response.json()["code"] == code
    assert not Message.objects.filter(conversation=thread).exists()


def test_size_count_and_thread_limits_answer_413(owner_client, thread, settings, upload):
    settings.ATTACHMENT_MAX_FILE_BYTES = 1000
    settings.ATTACHMENT_MAX_FILES = 2
    settings.ATTACHMENT_MAX_THREAD_BYTES = 1500
    big = upload(owner_client, thread, SimpleUploadedFile("big.txt", b"x" * 1001))
    assert big.status_code == 413 and big.json()["code"] == "attachment_too_large"
    many = upload(owner_client, thread, *(SimpleUploadedFile(f"{i}.txt", b"hi") for i in range(3)))
    assert many.status_code == 413 and many.json()["code"] == "too_many_attachments"
    assert upload(owner_client, thread, SimpleUploadedFile("a.txt", b"a" * 900)).status_code == 202
    full = upload(owner_client, thread, SimpleUploadedFile("b.txt", b"b" * 900))
    assert full.status_code == 413 and full.json()["code"] == "thread_attachments_full"
    assert Attachment.objects.filter(conversation=thread).count() == 1


@pytest.mark.parametrize(
    ("name", "saved"),
    [
        ("../../etc/passwd", "passwd"),
        ("/etc/shadow", "shadow"),
        ("C:\\Windows\\evil.txt", "evil.txt"),
        ("..", "file"),
        ("", "file"),
        (".hidden", "hidden"),
        ("a\x00b.txt", "a-b.txt"),
        ("报告 (final).md", "报告-final-.md"),
    ],
)
def test_upload_names_cannot_leave_uploads(name, saved):
    assert safe_name(name) == saved
    path = upload_path(name, "0" * 64)
    assert path.startswith("uploads/000000000000-") and path.count("/") == 1


def test_a_hostile_name_is_saved_inside_uploads(owner_client, thread, scripted_model, upload):
    scripted_model("ok")
    response = upload(owner_client, thread, SimpleUploadedFile("../../outside.txt", b"hello"))
    assert response.status_code == 202, response.content
    [attachment] = response.json()["message"]["attachments"]
    assert attachment["path"].startswith("uploads/") and attachment["path"].endswith("-outside.txt")


def test_another_users_thread_is_404_and_nothing_is_saved(client, other_user, thread, upload):
    client.force_login(other_user)
    response = upload(client, thread, SimpleUploadedFile("a.txt", b"hello"))
    assert response.status_code == 404 and response.json()["code"] == "thread_not_found"
    assert not Attachment.objects.exists()


def test_sniffing_names_text_types_only_from_text_content():
    assert sniff(b'{"a": 1}', name="data.json").mime_type == "application/json"
    assert sniff(b"a,b\n1,2\n", name="t.csv").mime_type == "text/csv"
    assert sniff(b"print('hi')\n", name="x.py").mime_type == "text/plain"
    assert sniff(png_bytes(), name="not-an-image.txt").kind == Kind.IMAGE
    assert sniff(io.BytesIO(pdf_bytes("x")).read(), name="x.bin").kind == Kind.PDF


def test_the_file_view_shows_images_pdfs_and_text_and_downloads_the_rest(
    owner_client, thread, workdir_storage
):
    workdir = workdir_for(thread)
    image, pdf = png_bytes(), pdf_bytes("x")
    workdir.write_bytes("uploads/a.png", image)
    workdir.write_bytes("uploads/b.pdf", pdf)
    workdir.write_bytes("uploads/c.html", b"<script>alert(1)</script>")
    workdir.write_bytes("uploads/d.bin", ELF)
    base = f"/threads/{thread.thread_id}/files"
    shown = owner_client.get(f"{base}/uploads/a.png")
    assert shown["Content-Type"] == "image/png" and shown.getvalue() == image
    assert shown["Content-Disposition"].startswith("inline") and shown["X-Content-Type-Options"] == "nosniff"
    opened = owner_client.get(f"{base}/uploads/b.pdf")
    assert opened["Content-Type"] == "application/pdf" and opened.getvalue() == pdf
    assert opened["Content-Disposition"].startswith("inline")  # opens in the browser's PDF viewer
    assert owner_client.get(f"{base}/uploads/b.pdf?download=1")["Content-Disposition"].startswith(
        "attachment"
    )
    assert owner_client.get(f"{base}/uploads/c.html?raw=1")["Content-Type"] == "text/plain; charset=utf-8"
    assert b"<script>" not in owner_client.get(f"{base}/uploads/c.html").content
    assert owner_client.get(f"{base}/uploads/d.bin")["Content-Type"] == "application/octet-stream"
