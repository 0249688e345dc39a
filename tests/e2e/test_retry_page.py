"""Retry on the thread page: a failed turn shows its failure once (the status line, in the reader's
language) with a Retry button; one click sends the same message again and the answer replaces the
failure, in Chromium at 1366 and 390 px, in English and 简体中文."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import assert_no_sideways_scroll, restore_language, settled_box, switch_language

pytestmark = [pytest.mark.browser, pytest.mark.layout]

RETRY = {"en": "Retry", "zh-hans": "重试"}
FAILED = {"en": "The last run failed:", "zh-hans": "上一次运行失败："}


@pytest.fixture
def failing_model(e2e_server):
    e2e_server.seed("failing_model", error="Endpoint 'x' has no key.")
    yield
    e2e_server.seed("fast_model")


@pytest.mark.parametrize("width", [1366, 390])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_retry_sends_a_failed_turn_again_in_one_click(open_page, e2e_server, failing_model, width, language):
    thread_id = e2e_server.seed("thread", title="Retry me")["thread_id"]
    page = open_page(width=width, height=844 if width < 500 else 900)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"/threads/{thread_id}/")
    switch_language(page, language)
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    page.fill("#composer-input", "Which trains go to Lyon?")
    page.locator("#composer button[type=submit]").last.click()

    status = page.locator("#run-status .status-failed")
    expect(status).to_contain_text(FAILED[language], timeout=20_000)
    # Shown once: the transcript's notice of this failure is not shown beside the status line.
    expect(page.locator("#transcript .message.role-system")).to_be_hidden()
    retry = page.locator("#retry-button")
    expect(retry).to_have_text(RETRY[language])
    box = settled_box(retry)
    assert box and box["height"] >= 24 and box["width"] >= 24
    assert_no_sideways_scroll(page, width)
    page.screenshot(path=f"/tmp/i39a-retry-{language}-{width}.png")

    e2e_server.seed("fast_model")
    retry.click()
    reply = page.locator("#transcript .message.role-assistant")
    expect(reply).to_have_count(1, timeout=20_000)
    expect(reply).to_contain_text("Which trains go to Lyon?")  # the offline model answers the same words
    expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded")
    expect(page.locator("#retry-button")).to_have_count(0)
    users = page.locator("#transcript .message.role-user")
    expect(users).to_have_count(1)  # the same message, not a second one
    expect(page.locator("#transcript .message.role-system:visible")).to_have_count(0)
    assert errors == []
    restore_language(page, language)
