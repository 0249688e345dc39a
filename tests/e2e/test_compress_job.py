"""A compression job on the thread page at desktop and phone widths, in English and 简体中文: the card
shows its progress while the summary is written (nothing locked meanwhile) and Stop ends it with the
thread unchanged."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conversations.page_support import usage_at
from tests.e2e.chat_support import View, assert_no_sideways_scroll, open_context, plan_a_trip, thread_page

pytestmark = pytest.mark.browser

WORDS = {
    "en": ("Writing the summary", "Compression stopped"),
    "zh-hans": ("正在撰写摘要", "压缩已停止"),
}


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_card_shows_the_job_in_progress_and_stop_ends_it_with_nothing_applied(
    browser, e2e_server, width, height, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Trip planning")["thread_id"]
    try:
        with thread_page(
            browser, e2e_server, thread_id, View(width=width, height=height, language=language)
        ) as page:
            plan_a_trip(page, last="Budget.")
            e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))
            page.reload()
            expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
            e2e_server.seed("slow_summary", delay=60)

            open_context(page)  # a drawer on a phone
            page.click("#compress-button")
            expect(page.locator("#compress-preview")).to_be_visible()
            page.click("#compress-apply")

            progress = page.locator("#compression-job")
            expect(progress).to_have_attribute("data-job-status", "running")
            running, stopped = WORDS[language]
            expect(progress).to_contain_text(running)
            expect(page.locator("#compress-button")).to_be_disabled()
            assert_no_sideways_scroll(page, width)
            page.evaluate("document.getElementById('compression-job').scrollIntoView({block: 'center'})")
            screenshot(page, f"compress-job-{language}-{width}")
            # A reload (or a second tab) shows the same job with its Stop.
            page.reload()
            expect(page.locator("#compression-job")).to_have_attribute("data-job-status", "running")

            open_context(page)
            page.click("#compress-stop")

            expect(page.locator("#compression-status")).to_have_attribute("data-status", "cancelled")
            expect(page.locator("#compression-status")).to_contain_text(stopped)
            expect(page.locator("#compress-button")).to_be_enabled()
            records = e2e_server.seed("records", thread_id=thread_id)["records"]
            assert not [r for r in records if r.get("status") == "completed" and r.get("trigger") == "manual"]
            screenshot(page, f"compress-job-stopped-{language}-{width}")
    finally:
        e2e_server.seed("fast_model")
