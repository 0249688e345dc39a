"""A compression job on the thread page at desktop and phone widths, in English and 简体中文: the card
shows its progress while the summary is written (nothing locked meanwhile) and Stop ends it with the
thread unchanged."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conversations.page_support import usage_at
from tests.e2e.test_context_coherence import _send

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
    context = browser.new_context(base_url=e2e_server.base_url, viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(20000)
    try:
        page.goto("/accounts/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "pw-alice-123")
        page.click("main button[type=submit]")
        page.goto(f"/threads/{thread_id}/")
        if language != "en":
            page.click(f"button[name=language][value={language}]")
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        detail = " We want the old town, the museums, the coast and day trips by train." * 6
        for text in ("We are planning a trip to Lisbon." + detail, "I prefer trains." + detail, "Budget."):
            _send(page, text)
        e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))
        page.reload()
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        e2e_server.seed("slow_summary", delay=60)

        page.click("#compress-button")
        expect(page.locator("#compress-preview")).to_be_visible()
        page.click("#compress-apply")

        progress = page.locator("#compression-job")
        expect(progress).to_have_attribute("data-job-status", "running")
        running, stopped = WORDS[language]
        expect(progress).to_contain_text(running)
        expect(page.locator("#compress-button")).to_be_disabled()
        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px"
        page.evaluate("document.getElementById('compression-job').scrollIntoView({block: 'center'})")
        screenshot(page, f"compress-job-{language}-{width}")
        # A reload (or a second tab) shows the same job with its Stop.
        page.reload()
        expect(page.locator("#compression-job")).to_have_attribute("data-job-status", "running")

        page.click("#compress-stop")

        expect(page.locator("#compression-status")).to_have_attribute("data-status", "cancelled")
        expect(page.locator("#compression-status")).to_contain_text(stopped)
        expect(page.locator("#compress-button")).to_be_enabled()
        records = e2e_server.seed("records", thread_id=thread_id)["records"]
        assert not [r for r in records if r.get("status") == "completed" and r.get("trigger") == "manual"]
        screenshot(page, f"compress-job-stopped-{language}-{width}")
    finally:
        e2e_server.seed("fast_model")
        if language != "en":
            page.click("button[name=language][value=en]")
        context.close()
