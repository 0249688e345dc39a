"""Pinning a folded message shows at once: the memory panel names it and the meter's figure grows,
without a reload, in Chromium at 1366 and 390 px, in English and 简体中文."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import (
    View,
    assert_no_sideways_scroll,
    compress_now,
    open_context,
    plan_a_trip,
    thread_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.layout]


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_pinning_a_folded_message_shows_at_once_and_the_meter_counts_it(
    browser, e2e_server, width, height, language
):
    thread_id = e2e_server.seed("thread", title="Pin the start")["thread_id"]
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language)
    ) as page:
        plan_a_trip(page, last="Budget.")
        compress_now(page, thread_id)
        expect(page.locator("#memory-pinned")).to_have_count(0)
        before = int(page.locator("#state-panel").get_attribute("data-tokens"))

        page.locator("#message-1 .pin-toggle").click()
        expect(page.locator("#message-1 .pin-toggle")).to_have_attribute("aria-pressed", "true")

        open_context(page)  # a drawer on a phone
        expect(page.locator("#memory-pinned a[href='#message-1']")).to_be_visible()
        panel = page.locator("#state-panel")
        expect(panel).not_to_have_attribute("data-tokens", str(before))
        after = int(panel.get_attribute("data-tokens"))
        assert after > before, (before, after)
        assert_no_sideways_scroll(page, width)
        page.screenshot(path=f"/tmp/i39a-pin-{language}-{width}.png")
