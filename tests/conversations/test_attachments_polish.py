"""Attachments polish (issue 26 item 15): refusals in plain words, PDFs that open in the browser with
their extracted text linked, a note when the agent cannot see images, one size format."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template.defaultfilters import filesizeformat

from conversations.models import Attachment
from tests.support.files import pdf_bytes, png_bytes

pytestmark = pytest.mark.django_db

WINDOWS_PROGRAM = b"MZ\x90\x00\x03\x00\x00\x00" + b"\x00" * 200


def _upload(client, thread, name, data, **headers):
    return client.post(
        f"/api/threads/{thread.thread_id}/messages/upload",
        {"content": "", "files": [SimpleUploadedFile(name, data)]},
        headers=headers,
    )


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("tool.txt", WINDOWS_PROGRAM, "tool.txt looks like a Windows program; it can't be attached."),
        ("notes.md", b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 200, "notes.md looks like a Linux program;"),
        ("data.csv", b"PK\x03\x04" + b"\x00" * 100, "data.csv looks like a compressed archive;"),
        ("song.txt", b"ID3" + b"\x00" * 100, "song.txt looks like a sound recording;"),
        ("blob.txt", b"abc\x00def", "blob.txt is not text and not a file type that can be attached."),
    ],
)
def test_refusals_say_what_the_file_looks_like_in_plain_words(owner_client, thread, name, data, words):
    response = _upload(owner_client, thread, name, data)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "attachment_refused" and body["message"].startswith(words), body
    assert "application/" not in body["message"] and "Attach text, Markdown" in body["message"]
    assert not Attachment.objects.exists()


def test_refusals_are_translated(owner_client, thread):
    response = _upload(owner_client, thread, "tool.txt", WINDOWS_PROGRAM, **{"Accept-Language": "zh-hans"})
    assert response.status_code == 422
    assert response.json()["message"].startswith("tool.txt 看起来是Windows 程序，无法附加。")


def test_a_pdf_opens_in_the_browser_and_links_its_extracted_text(owner_client, thread):
    assert _upload(owner_client, thread, "report.pdf", pdf_bytes("Quarterly figures rose")).status_code == 202
    attachment = Attachment.objects.get()
    base = f"/threads/{thread.thread_id}/files/"
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert f'href="{base}{attachment.path}?raw=1"' in page
    assert f'href="{base}{attachment.extracted_text_path}"' in page
    opened = owner_client.get(f"{base}{attachment.path}?raw=1")
    assert opened["Content-Type"] == "application/pdf" and opened["Content-Disposition"].startswith("inline")
    text = owner_client.get(f"{base}{attachment.extracted_text_path}")
    assert text.status_code == 200 and "Quarterly figures rose" in text.content.decode()


def test_an_agent_that_cannot_see_images_says_so_by_the_image(owner_client, thread):
    assert not thread.agent.sees_images
    assert _upload(owner_client, thread, "chart.png", png_bytes()).status_code == 202
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    note = "This agent cannot see images: it is told only the file’s name, type and size."
    assert page.count(note) == 2  # by the image in the transcript, and for the composer's chips
    assert "data-no-vision=" in page


def test_sizes_have_one_format_on_the_page_and_in_the_composer(owner_client, thread):
    assert _upload(owner_client, thread, "notes.txt", b"x" * 2000).status_code == 202
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert filesizeformat(2000) in page  # the transcript's chip
    # The composer formats sizes from the server's own samples (same words, same language).
    for sample in (1, 2, 1536, 1572864):
        assert f'="{filesizeformat(sample)}"' in page
