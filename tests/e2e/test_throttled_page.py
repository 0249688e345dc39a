"""A throttled send and a throttled compression are told in words on the thread page (the composer's
error line, the compression notice), in English and 简体中文, at 1366 and 390 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conversations.page_support import usage_at
from tests.e2e.chat_support import View, close_context, open_context, plan_a_trip, thread_page

pytestmark = [pytest.mark.browser, pytest.mark.layout]

WORDS = {
    "en": ("Too many messages: at most 1 a minute.", "Too many compressions: at most 1 a minute."),
    "zh-hans": ("消息过于频繁：每分钟最多 1 次。", "压缩过于频繁：每分钟最多 1 次。"),
}
OFF = {
    f"THROTTLE_{kind}_{limit}": 0
    for kind in ("SEND", "UPLOAD", "COMPRESS")
    for limit in ("PER_MINUTE", "CONCURRENT")
}


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_throttled_send_and_compression_are_told_in_words(
    browser, e2e_server, width, height, language, screenshot
):
    send_words, compress_words = WORDS[language]
    thread_id = e2e_server.seed("thread", title="Throttled")["thread_id"]
    try:
        with thread_page(
            browser, e2e_server, thread_id, View(width=width, height=height, language=language)
        ) as page:
            plan_a_trip(page, last="Budget?")

            # This minute's compression is used up: the apply button's request answers 429.
            e2e_server.seed("throttle", limits={**OFF, "THROTTLE_COMPRESS_PER_MINUTE": 1}, spend=["compress"])
            e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))
            page.reload()
            expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
            open_context(page)  # a drawer on a phone
            page.click("#compress-button")
            page.click("#compress-apply")
            notice = page.locator("#compress-notice")
            expect(notice).to_contain_text(compress_words)
            expect(page.locator("#compress-button")).to_be_enabled()  # the state refreshed after the answer
            expect(notice).to_contain_text(compress_words)  # and the reason is still there
            notice.scroll_into_view_if_needed()
            if (language, width) == ("en", 1366):
                screenshot(page, "throttled-compress-en-1366")

            # This minute's send is used up: the message stays in the box, the reason under it.
            e2e_server.seed("throttle", limits={**OFF, "THROTTLE_SEND_PER_MINUTE": 1}, spend=["send"])
            close_context(page)
            page.fill("#composer-input", "One more, please.")
            page.keyboard.press("Enter")
            expect(page.locator("#composer-error")).to_contain_text(send_words)
            expect(page.locator("#composer-input")).to_have_value("One more, please.")
            if (language, width) == ("zh-hans", 390):
                screenshot(page, "throttled-send-zh-hans-390")
    finally:
        e2e_server.seed("throttle", limits=OFF)
