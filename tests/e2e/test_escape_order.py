"""Esc closes what is open before it stops the reply (issue 26 follow-up), in Chromium at 1366 and
390 px, English and 简体中文: an open compression preview first, then the phone's drawer, then an open
Rename; only then the running reply. A preview out of view (in the closed drawer) does not take Esc."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conversations.page_support import usage_at
from tests.e2e.chat_support import (
    LONG_REPLY,
    View,
    close_context,
    open_context,
    send,
    send_and_wait,
    thread_page,
)

pytestmark = pytest.mark.browser


def _running(page) -> None:
    expect(page.locator("#run-status")).to_have_attribute("data-status", "running")


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_esc_closes_the_preview_before_it_stops_the_reply(
    browser, e2e_server, slow_model, width, height, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Keys")["thread_id"]
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language)
    ) as page:
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        send_and_wait(page, "Hello.")
        e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))  # the hint offers compressing
        page.reload()
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        preview = page.locator("#compress-preview")
        open_context(page)  # a drawer on a phone
        page.click("#compress-button")
        expect(preview).to_be_visible()
        if width < 900:
            # The preview stays in the closed drawer, out of view: Esc there belongs to the reply.
            close_context(page)
        send(page, LONG_REPLY)
        expect(page.locator("#stream-body")).to_contain_text("trains", timeout=20000)
        _running(page)

        if width < 900:
            open_context(page)
            expect(preview).to_be_visible()
            screenshot(page, f"escape-preview-{language}-{width}")
            page.keyboard.press("Escape")  # the preview first: the drawer stays open, the reply goes on
            expect(preview).to_have_count(0)
            expect(page.locator("#context-toggle")).to_have_attribute("aria-expanded", "true")
            _running(page)
            page.keyboard.press("Escape")  # then the drawer
            expect(page.locator("#context-toggle")).to_have_attribute("aria-expanded", "false")
            _running(page)
        else:
            expect(preview).to_be_visible()
            expect(page.locator("#composer-input")).to_be_focused()
            screenshot(page, f"escape-preview-{language}-{width}")
            page.keyboard.press("Escape")  # the preview first, the focus stays in the message box
            expect(preview).to_have_count(0)
            expect(page.locator("#composer-input")).to_be_focused()
            _running(page)
            page.locator("details.rename > summary").click()  # then an open Rename around the focus
            page.locator("#rename-input").focus()
            page.keyboard.press("Escape")
            expect(page.locator("details.rename")).not_to_have_attribute("open", "")
            _running(page)
        page.keyboard.press("Escape")  # nothing else is open: the reply stops
        expect(page.locator("#run-status")).to_have_attribute("data-status", "cancelled", timeout=20000)
        assert errors == []
