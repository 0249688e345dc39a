"""A staff member who may read every thread opens someone else's: the page works (live updates, the
context panel, the transcript) and offers none of the owner's controls, in Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import (
    assert_no_sideways_scroll,
    close_context,
    open_context,
    restore_language,
    switch_language,
)

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("width", "language"), [(1366, "en"), (390, "zh-hans")])
def test_a_viewer_reads_the_owners_thread_without_its_controls(
    open_page, e2e_server, width, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Alice's trip")["thread_id"]
    owner = open_page()
    owner.goto(f"/threads/{thread_id}/")
    expect(owner.locator("#socket-status")).to_have_attribute("data-state", "open")
    owner.fill("#composer-input", "We are planning a trip to Lisbon.")
    owner.press("#composer-input", "Enter")
    expect(owner.locator("#transcript .message.role-assistant .message-body").first).to_be_visible(
        timeout=20_000
    )

    viewer = open_page(staff=True, width=width, height=844 if width < 500 else 900)
    errors: list[str] = []
    viewer.on("pageerror", lambda error: errors.append(str(error)))
    viewer.goto(f"/threads/{thread_id}/")
    switch_language(viewer, language)
    expect(viewer.locator("#socket-status")).to_have_attribute("data-state", "open")
    expected = "You are reading alice's thread" if language == "en" else "你正在阅读 alice 的会话"
    expect(viewer.locator("#read-only")).to_contain_text(expected)
    for control in ("#composer", "#stop-form", ".rename", ".danger-zone", ".pin-toggle", "#compress-button"):
        expect(viewer.locator(control)).to_have_count(0)
    expect(viewer.locator("#transcript .role-user .author").first).to_have_text("alice")
    open_context(viewer)  # a drawer on a phone
    expect(viewer.locator("#state-panel")).to_be_visible()
    close_context(viewer)

    # The owner writes again: the viewer's page follows live.
    owner.fill("#composer-input", "I prefer trains to planes.")
    owner.press("#composer-input", "Enter")
    expect(viewer.locator("#transcript")).to_contain_text("I prefer trains to planes.", timeout=20_000)
    assert_no_sideways_scroll(viewer, width)
    assert errors == []
    screenshot(viewer, f"thread-read-only-{language}-{width}")
    restore_language(viewer, language)
