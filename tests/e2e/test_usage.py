"""Usage accounting in Chromium (issue 27, item 7): a reply's usage on demand on the thread page, and
the admin's usage page, at 1366 and 390 px, in English and 简体中文, with no sideways scroll."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import assert_no_sideways_scroll, restore_language, send_and_wait, switch_language

pytestmark = pytest.mark.browser

WIDTHS_AND_LANGUAGES = [(1366, "en"), (390, "zh-hans"), (1366, "zh-hans"), (390, "en")]
LABELS = {
    "en": {"summary": "Usage", "prompt": "Prompt tokens", "cost": "not priced", "title": "Usage"},
    "zh-hans": {"summary": "用量", "prompt": "提示 token", "cost": "未计价", "title": "用量"},
}


@pytest.mark.parametrize(("width", "language"), WIDTHS_AND_LANGUAGES)
def test_a_replys_usage_shows_on_demand(open_page, e2e_server, width, language, screenshot):
    thread_id = e2e_server.seed("thread", title="Usage")["thread_id"]
    page = open_page(width=width, height=844 if width < 500 else 900)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"/threads/{thread_id}/")
    switch_language(page, language)
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    # Waits for the written answer itself: the run's status can read "succeeded" before the page has
    # fetched that answer, when the last usage on the page is still the tool-calling reply's (a CI run
    # opened that one and then found the answer's closed).
    send_and_wait(page, "Search the knowledge base for the release checklist.")

    usage = page.locator("#transcript .message.role-assistant").last.locator(".message-usage")
    expect(usage).to_be_visible()
    labels = LABELS[language]
    expect(usage.locator("summary")).to_have_text(labels["summary"])
    expect(usage.locator("dl")).to_be_hidden()  # on demand: closed until asked
    usage.locator("summary").click()
    expect(usage.locator("dl")).to_be_visible()
    expect(usage).to_contain_text(labels["prompt"])
    expect(usage).to_contain_text(labels["cost"])  # the offline model has no endpoint, so no price
    prompt_tokens = int(usage.locator("dd").first.inner_text())
    assert prompt_tokens > 0
    # The thread's own usage (issue 40): its prompt tokens and the share the provider's cache served.
    page.reload()
    expect(page.locator("#thread-usage")).to_be_attached()  # (in the side drawer on a phone)
    expect(
        page.locator("#prefix-reuse")
    ).to_be_attached()  # the tool turn's second request repeated the first
    assert_no_sideways_scroll(page, width)
    usage.scroll_into_view_if_needed()
    assert_no_sideways_scroll(page, width)
    assert errors == []
    screenshot(page, f"thread-usage-{language}-{width}")
    restore_language(page, language)


@pytest.mark.parametrize(("width", "language"), [(1366, "en"), (390, "zh-hans")])
def test_the_admin_shows_usage_per_user(open_page, e2e_server, width, language, screenshot):
    thread_id = e2e_server.seed("thread", title="Usage for the admin")["thread_id"]
    owner = open_page()
    owner.goto(f"/threads/{thread_id}/")
    expect(owner.locator("#socket-status")).to_have_attribute("data-state", "open")
    owner.fill("#composer-input", "Hello there.")
    owner.press("#composer-input", "Enter")
    expect(owner.locator("#transcript .message.role-assistant .message-usage").first).to_be_attached(
        timeout=20_000
    )

    admin = open_page(staff=True, width=width, height=844 if width < 500 else 900)
    switch_language(admin, language)
    admin.goto("/admin/usage/?group=user")
    expect(admin.locator("#content h1")).to_have_text(LABELS[language]["title"])
    row = admin.locator("#usage-table tbody tr", has_text="alice")
    expect(row).to_have_count(1)
    replies = int(row.locator("td").nth(1).inner_text())
    assert replies >= 1
    assert_no_sideways_scroll(admin, width)
    screenshot(admin, f"admin-usage-{language}-{width}")
    admin.goto("/admin/usage/?group=day")
    expect(admin.locator("#usage-table tfoot td").first).to_have_text("Total" if language == "en" else "合计")
    restore_language(admin, language)
