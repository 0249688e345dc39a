"""Sharing one thread in Chromium: the owner shares it with a named user and makes a read-only link from
the "Share" panel; the named user reads the thread without its controls, the link opens its transcript
to someone not signed in, and a revoked link is a friendly 404. English and 简体中文, 1366 and 390 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import (
    View,
    assert_no_sideways_scroll,
    log_in,
    new_page,
    open_context,
    phone_height,
    restore_language,
    switch_language,
)

pytestmark = [pytest.mark.browser, pytest.mark.layout]

READER, READER_PASSWORD = "bob", "pw-bob-123"
WORDS = {
    "en": {
        "shared": "Shared with bob (read-only).",
        "reading": "You are reading alice's thread",
        "gone": "This link opens nothing",
    },
    "zh-hans": {
        "shared": "已分享给 bob（只读）。",
        "reading": "你正在阅读 alice 的会话",
        "gone": "此链接无法打开任何内容",
    },
}


def _share(owner, width: int, language: str) -> str:
    """The owner shares the thread with bob and makes its link from the panel; the link."""
    open_context(owner)  # the panel is in the context drawer on a phone
    panel = owner.locator("#share-panel")
    panel.locator("#share-username").fill(READER)
    with owner.expect_navigation():  # a form post, then the thread page again
        panel.locator(".share-add button[type=submit]").click()
    expect(owner.locator(".flash")).to_contain_text(WORDS[language]["shared"])
    open_context(owner)
    expect(owner.locator("#share-list .share-name")).to_have_text([READER])
    with owner.expect_navigation():
        owner.locator("#share-link-create").click()
    open_context(owner)
    link = owner.locator("#share-link-url").input_value()
    assert "/s/" in link
    owner.locator("#share-link-url").scroll_into_view_if_needed()
    assert_no_sideways_scroll(owner, width)
    return link


def _named_reader_reads(reader, thread_id: str, width: int, language: str) -> None:
    """bob reads the thread, read-only, through the ordinary thread page."""
    log_in(reader, READER, READER_PASSWORD)
    reader.goto(f"/threads/{thread_id}/")
    switch_language(reader, language)
    expect(reader.locator("#transcript")).to_contain_text("Trains, along the coast.")
    expect(reader.locator("#read-only")).to_contain_text(WORDS[language]["reading"])
    for control in ("#composer", ".rename", ".danger-zone", "#share-panel", ".pin-toggle"):
        expect(reader.locator(control)).to_have_count(0)
    assert_no_sideways_scroll(reader, width)


def _stranger_reads_the_link(stranger, link: str, width: int, language: str) -> None:
    """Someone not signed in opens the link: the transcript alone, whose Copy buttons work."""
    stranger.goto(link)
    switch_language(stranger, language)
    expect(stranger.locator("#transcript")).to_contain_text("Trains or planes?")
    expect(stranger.locator("#thread-title")).to_have_text("Lisbon trip")
    expect(stranger.locator("#composer")).to_have_count(0)
    stranger.context.grant_permissions(["clipboard-read", "clipboard-write"])
    stranger.locator("#transcript .role-assistant .copy-message").click()
    assert stranger.evaluate("navigator.clipboard.readText()") == "Trains, along the coast."
    assert_no_sideways_scroll(stranger, width)


@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize("width", [1366, 390])
def test_an_owner_shares_a_thread_and_others_read_it(
    open_page, browser, e2e_server, width, language, screenshot
):
    e2e_server.seed("reader", username=READER, password=READER_PASSWORD)
    thread_id = e2e_server.seed("thread", title="Lisbon trip")["thread_id"]
    exchange = [["user", "Trains or planes?"], ["assistant", "Trains, along the coast."]]
    e2e_server.seed("messages", thread_id=thread_id, messages=exchange)
    view = View(width=width, height=phone_height(width))

    owner = open_page(width=width, height=phone_height(width))
    errors: list[str] = []
    owner.on("pageerror", lambda error: errors.append(str(error)))
    owner.goto(f"/threads/{thread_id}/")
    switch_language(owner, language)
    link = _share(owner, width, language)
    screenshot(owner, f"thread-share-panel-{language}-{width}")

    reader = new_page(browser, e2e_server, view)
    _named_reader_reads(reader, thread_id, width, language)
    screenshot(reader, f"thread-shared-reader-{language}-{width}")

    stranger = new_page(browser, e2e_server, view)
    _stranger_reads_the_link(stranger, link, width, language)
    screenshot(stranger, f"thread-link-reader-{language}-{width}")

    # The owner revokes the link: the same address is now a friendly 404.
    open_context(owner)
    with owner.expect_navigation():
        owner.locator("#share-link-revoke").click()
    open_context(owner)
    expect(owner.locator("#share-link-create")).to_be_visible()
    response = stranger.goto(link)
    assert response is not None and response.status == 404
    expect(stranger.locator("h1")).to_have_text(WORDS[language]["gone"])
    expect(stranger.locator("body")).not_to_contain_text("Trains")
    assert errors == []
    stranger.context.close()
    restore_language(reader, language)
    reader.context.close()
    restore_language(owner, language)
