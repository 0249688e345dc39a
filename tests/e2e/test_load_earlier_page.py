"""A thread over 500 messages loads its earlier messages from the page, keeping the reader's place, in
Chromium at 1366 and 390 px, in English and 简体中文."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import assert_no_sideways_scroll, restore_language, settled_box, thread_in

pytestmark = [pytest.mark.browser, pytest.mark.layout]

NOT_SHOWN = {"en": "20 earlier messages are not shown.", "zh-hans": "20"}
BUTTON = {"en": "Show earlier messages", "zh-hans": "显示更早的消息"}


@pytest.mark.parametrize("width", [1366, 390])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_earlier_messages_of_a_long_thread_load_on_demand(open_page, e2e_server, width, language):
    turns = [("user" if i % 2 else "assistant", f"message number {i}") for i in range(1, 521)]
    thread_id = e2e_server.seed("thread", title="Long one")["thread_id"]
    e2e_server.seed("messages", thread_id=thread_id, messages=turns)
    page, errors = thread_in(open_page, thread_id, width=width, language=language)
    expect(page.locator("#transcript .message")).to_have_count(500)
    earlier = page.locator("#transcript-earlier")
    expect(earlier).to_contain_text(NOT_SHOWN[language])
    button = page.locator("#load-earlier")
    expect(button).to_have_text(BUTTON[language])
    box = settled_box(button)
    assert box and box["height"] >= (44 if width < 500 else 24)
    button.click()
    expect(page.locator("#transcript .message")).to_have_count(520)
    expect(page.locator("#message-1")).to_contain_text("message number 1")
    expect(earlier).to_be_hidden()
    # The messages stay in order: the 20 loaded ones come before the 500 already shown.
    seqs = page.locator("#transcript .message").evaluate_all(
        "(items) => items.map((i) => Number(i.dataset.seq))"
    )
    assert seqs == sorted(seqs) and seqs[0] == 1
    assert_no_sideways_scroll(page, width)
    page.screenshot(path=f"/tmp/i39a-earlier-{language}-{width}.png")
    assert errors == []
    restore_language(page, language)
