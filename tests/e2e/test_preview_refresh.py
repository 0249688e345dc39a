"""Issue 26, item 5: a preview never goes stale. In Chromium at 1366 and 390 px, English and 简体中文:
a message sent while the compression preview is open changes the thread under it; the preview fetches
itself again, says so, and applying it then compresses (no "the thread changed" refusal)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conversations.page_support import usage_at
from tests.e2e.chat_support import (
    assert_no_sideways_scroll,
    close_context,
    open_context,
    plan_a_trip,
    send_and_wait,
    thread_in,
)

pytestmark = pytest.mark.browser

REFRESHED = {
    "en": "The thread changed while this preview was open",
    "zh-hans": "预览打开期间会话已有变化",
}


@pytest.mark.parametrize("width", [1366, 390])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_an_open_preview_refreshes_itself_when_the_thread_changes(
    open_page, e2e_server, width, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Preview refresh")["thread_id"]
    page, errors = thread_in(open_page, thread_id, width=width, language=language)
    plan_a_trip(page, "Budget.")
    e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))
    page.reload()
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    open_context(page)  # on a phone the panel is a drawer
    page.click("#compress-button")
    preview = page.locator("#compress-preview")
    expect(preview).to_be_visible()
    first_id = preview.get_attribute("data-preview-id")
    assert first_id

    close_context(page)
    send_and_wait(page, "One more thing: we travel in May.")  # the thread changes under the open preview
    open_context(page)

    expect(page.locator("#compress-preview-refreshed")).to_contain_text(REFRESHED[language])
    expect(preview).not_to_have_attribute("data-preview-id", first_id)
    assert_no_sideways_scroll(page, width)
    page.evaluate("document.getElementById('compress-preview').scrollIntoView({block: 'center'})")
    screenshot(page, f"preview-refreshed-{language}-{width}")

    page.click("#compress-apply")
    expect(page.locator("#compression-status")).to_have_attribute("data-status", "completed", timeout=30000)
    expect(page.locator("#compress-notice")).to_be_hidden()
    records = e2e_server.seed("records", thread_id=thread_id)["records"]
    assert any(r["trigger"] == "manual" and r["status"] == "completed" for r in records), records
    assert errors == []
