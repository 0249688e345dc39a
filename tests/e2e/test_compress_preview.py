"""The compression preview at desktop and phone widths, in English and 简体中文: before this agent has
summaries on record it shows the size after as a range, and nothing spills sideways."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conversations.page_support import usage_at
from tests.e2e.chat_support import open_context, plan_a_trip, thread_page

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_preview_shows_a_range_until_the_agent_has_summaries_on_record(
    browser, e2e_server, width, height, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Trip planning")["thread_id"]
    with thread_page(browser, e2e_server, thread_id, width=width, height=height, language=language) as page:
        plan_a_trip(page, last="Budget 900 euros.")
        e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))
        page.reload()
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        open_context(page)  # a drawer on a phone
        page.click("#compress-button")
        preview = page.locator("#compress-preview")
        expect(preview).to_be_visible()
        expect(page.locator("#compress-preview-range")).to_be_visible()
        preview.scroll_into_view_if_needed()
        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px"
        if (language, width) == ("zh-hans", 390):
            screenshot(page, "compress-preview-zh-hans-390")
