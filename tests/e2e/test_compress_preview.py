"""The compression preview at desktop and phone widths, in English and 简体中文: with the offline model
as the summarizer (local code) it shows the size after computed, the one compressing then gives, and
nothing spills sideways. (A provider's agent gets an estimate with a range: tests/compression.)"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conversations.page_support import usage_at
from tests.e2e.test_context_coherence import _send

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_preview_shows_the_computed_size_with_the_offline_summarizer(
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
        for text in (
            "We are planning a trip to Lisbon." + detail,
            "I prefer trains." + detail,
            "Budget 900 euros.",
        ):
            _send(page, text)
        e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))
        page.reload()
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        page.click("#compress-button")
        preview = page.locator("#compress-preview")
        expect(preview).to_be_visible()
        expect(page.locator("#compress-preview-exact")).to_be_visible()
        expect(page.locator("#compress-preview-range")).to_have_count(0)
        shown_after = int(preview.get_attribute("data-after"))
        preview.scroll_into_view_if_needed()
        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px"
        if (language, width) == ("zh-hans", 390):
            screenshot(page, "compress-preview-zh-hans-390")
        if (language, width) == ("en", 1366):
            applied = page.request.post(
                f"/api/threads/{thread_id}/compress?wait=true&preview_id={preview.get_attribute('data-preview-id')}",
                headers={"X-CSRFToken": _csrf(context)},
            )
            assert applied.ok, applied.text()
            assert applied.json()["after_tokens"] == shown_after  # what the preview showed is what applies
    finally:
        if language != "en":
            page.click("button[name=language][value=en]")
        context.close()


def _csrf(context) -> str:
    return next(c["value"] for c in context.cookies() if c["name"] == "csrftoken")
