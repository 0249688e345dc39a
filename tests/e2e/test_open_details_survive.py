"""What a reader opened stays open while the page re-renders around it: the summary under "What the
agent remembers" is still open after a reply ends and the panels are rendered again (they used to be
swapped in closed, at any run's end), at desktop and phone widths, in English and 简体中文."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import View, compress_now, open_context, plan_a_trip, send_and_wait, thread_page

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_an_opened_summary_stays_open_when_the_panels_are_rendered_again(
    browser, e2e_server, width, height, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Open summary")["thread_id"]
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language)
    ) as page:
        plan_a_trip(page, last="Budget 900 euros.")
        compress_now(page, thread_id)
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        open_context(page)
        summary = page.locator("#memory-summary")
        summary.locator("> summary").click()
        expect(summary).to_have_attribute("open", "")
        page.evaluate("document.getElementById('memory-panel').dataset.marker = 'old'")
        if width < 900:
            page.locator("#context-close").click()
        send_and_wait(page, "One more thing: museums on Monday.")
        # The panel was rendered again (the marker is gone with the old element) and is still open.
        expect(page.locator("#memory-panel:not([data-marker])")).to_have_count(1)
        open_context(page)
        expect(page.locator("#memory-summary")).to_have_attribute("open", "")
        expect(page.locator("#memory-summary .summary-text h2").first).to_be_visible()
        # The panel may be rendered again meanwhile: scroll whichever element is current.
        page.evaluate("document.getElementById('memory-summary').scrollIntoView()")
        expect(page.locator("#memory-summary")).to_have_attribute("open", "")
        screenshot(page, f"summary-stays-open-{language}-{width}")
