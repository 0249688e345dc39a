"""The compression preview at desktop and phone widths, in English and 简体中文: with the offline model
as the summarizer (local code) it shows the size after computed, the one compressing then gives, and
nothing spills sideways. (A provider's agent gets an estimate with a range: tests/compression.)"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conversations.page_support import usage_at
from tests.e2e.chat_support import View, assert_no_sideways_scroll, open_context, plan_a_trip, thread_page

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_preview_shows_the_computed_size_with_the_offline_summarizer(
    browser, e2e_server, width, height, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Trip planning")["thread_id"]
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language)
    ) as page:
        plan_a_trip(page, last="Budget 900 euros.")
        e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))
        page.reload()
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        open_context(page)  # a drawer on a phone
        page.click("#compress-button")
        preview = page.locator("#compress-preview")
        expect(preview).to_be_visible()
        expect(page.locator("#compress-preview-exact")).to_be_visible()
        expect(page.locator("#compress-preview-range")).to_have_count(0)
        shown_after = int(preview.get_attribute("data-after"))
        preview.scroll_into_view_if_needed()
        assert_no_sideways_scroll(page, width)
        if (language, width) == ("zh-hans", 390):
            screenshot(page, "compress-preview-zh-hans-390")
        if (language, width) == ("en", 1366):
            applied = page.request.post(
                f"/api/threads/{thread_id}/compress?wait=true&preview_id={preview.get_attribute('data-preview-id')}",
                headers={"X-CSRFToken": _csrf(page.context)},
            )
            assert applied.ok, applied.text()
            assert applied.json()["after_tokens"] == shown_after  # what the preview showed is what applies


def _csrf(context) -> str:
    return next(c["value"] for c in context.cookies() if c["name"] == "csrftoken")
