"""Attaching files on the thread page, in headless Chromium: picker and paste, chips, a sent message
with a thumbnail that loads and a text file one click away."""

from __future__ import annotations

import base64

import pytest
from playwright.sync_api import expect

from tests.support.files import png_bytes

pytestmark = pytest.mark.browser

# Pastes a PNG into the composer as a browser does for a screenshot on the clipboard.
PASTE_IMAGE = """
(b64) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], "image.png", {type: "image/png"}));
  const event = new ClipboardEvent("paste", {clipboardData: transfer, bubbles: true, cancelable: true});
  document.getElementById("composer-input").dispatchEvent(event);
}
"""


def test_attach_an_image_and_a_text_file_then_send(page, e2e_server, screenshot, tmp_path):
    thread_id = e2e_server.seed("thread", title="Attachments")["thread_id"]
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")

    notes = tmp_path / "notes.md"
    notes.write_text("# Release notes\n\nShip on Friday.\n")
    page.set_input_files("#composer-files", str(notes))
    page.evaluate(PASTE_IMAGE, base64.b64encode(png_bytes(64, 48)).decode())
    chips = page.locator("#composer-attachments .attachment-chip")
    expect(chips).to_have_count(2)
    expect(chips.first).to_contain_text("notes.md")
    expect(chips.last).to_contain_text("pasted-")

    # A chip can be removed, and the file picker adds to what is already chosen.
    chips.last.locator("button").click()
    expect(chips).to_have_count(1)
    page.evaluate(PASTE_IMAGE, base64.b64encode(png_bytes(64, 48)).decode())
    expect(chips).to_have_count(2)
    screenshot(page, "thread-attach-composer")

    page.fill("#composer-input", "What is in these?")
    page.click("#composer button[type=submit]")
    sent = page.locator("#transcript .message.role-user").last
    expect(sent).to_contain_text("What is in these?")
    expect(sent.locator(".attachment")).to_have_count(2)
    expect(page.locator("#composer-attachments .attachment-chip")).to_have_count(0)
    thumbnail = sent.locator(".attachment-image img")
    expect(thumbnail).to_be_visible()
    page.wait_for_function("(img) => img.complete && img.naturalWidth === 64", arg=thumbnail.element_handle())
    expect(page.locator("#transcript .message.role-assistant").last).to_be_visible()
    screenshot(page, "thread-attachments")

    link = sent.locator(".attachment-text .attachment-name")
    with page.expect_navigation():
        link.click()
    expect(page.locator("body")).to_contain_text("Ship on Friday.")


def test_a_refused_file_keeps_the_draft_and_says_why(page, e2e_server, tmp_path):
    thread_id = e2e_server.seed("thread", title="Refused")["thread_id"]
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    program = tmp_path / "photo.png"
    program.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 300)
    page.fill("#composer-input", "Look at this")
    page.set_input_files("#composer-files", str(program))
    # Refused when picked (issue 39), not at Send: the draft stays, the file leaves the list.
    expect(page.locator("#composer-error")).to_contain_text(
        "photo.png looks like a Linux program; it can't be attached."
    )
    expect(page.locator("#composer-input")).to_have_value("Look at this")
    expect(page.locator("#composer-attachments .attachment-chip")).to_have_count(0)


# Drops files on the composer as a browser does when files are dragged from the desktop.
DROP_FILES = """
() => {
  const transfer = new DataTransfer();
  transfer.items.add(new File(["a,b\\n1,2\\n"], "table.csv", {type: "text/csv"}));
  const form = document.getElementById("composer");
  form.dispatchEvent(new DragEvent("dragover", {dataTransfer: transfer, bubbles: true, cancelable: true}));
  form.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true, cancelable: true}));
}
"""


def test_files_dropped_on_the_composer_are_sent(page, e2e_server):
    thread_id = e2e_server.seed("thread", title="Dropped")["thread_id"]
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    page.evaluate(DROP_FILES)
    expect(page.locator("#composer-attachments .attachment-chip")).to_have_count(1)
    expect(page.locator("#composer-attachments")).to_contain_text("table.csv")
    page.click("#composer button[type=submit]")  # files alone are a message
    sent = page.locator("#transcript .message.role-user").last
    expect(sent.locator(".attachment")).to_contain_text("text/csv")
