"""Attachments are refused when picked, every reason at once, on the composer's whole width: a program,
an empty file and one too large picked with a good one leave three reasons and one chip, before
anything is sent; in Chromium at 1366 and 390 px, in English and 简体中文."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import assert_no_sideways_scroll, restore_language, thread_in

pytestmark = [pytest.mark.browser, pytest.mark.layout]

MAX_FILE_BYTES = 10 * 1024 * 1024  # ATTACHMENT_MAX_FILE_BYTES, the default


@pytest.mark.parametrize("width", [1366, 390])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_refusal_shows_when_the_files_are_picked(open_page, e2e_server, tmp_path, width, language):
    thread_id = e2e_server.seed("thread", title="Picked")["thread_id"]
    page, errors = thread_in(open_page, thread_id, width=width, language=language)
    program, empty, notes = tmp_path / "photo.png", tmp_path / "empty.txt", tmp_path / "notes.md"
    program.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 300)
    empty.write_bytes(b"")
    notes.write_text("# Notes\nShip on Friday.\n")
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    page.set_input_files("#composer-files", [str(program), str(empty), str(notes), str(big)])

    error = page.locator("#composer-error")
    expect(error).to_contain_text("photo.png")
    expect(error).to_contain_text("empty.txt")
    expect(error).to_contain_text("big.txt")
    assert len(error.inner_text().strip().splitlines()) == 3  # one line per refusal, all at once
    chips = page.locator("#composer-attachments .attachment-chip")
    expect(chips).to_have_count(1)
    expect(chips).to_contain_text("notes.md")
    expect(page.locator("#transcript .message")).to_have_count(0)  # nothing was sent to find out
    # The reasons take the composer's width, not a narrow column beside the buttons.
    composer = page.locator("#composer").bounding_box()
    box = error.bounding_box()
    assert composer and box and box["width"] >= composer["width"] * 0.8, (box, composer)
    assert_no_sideways_scroll(page, width)
    page.screenshot(path=f"/tmp/i39a-refused-{language}-{width}.png")

    page.fill("#composer-input", "Here are my notes")
    page.locator("#composer .composer-actions button[type=submit]").click()
    sent = page.locator("#transcript .message.role-user").last
    expect(sent).to_contain_text("notes.md")
    assert errors == []
    restore_language(page, language)
