"""Issue 31: the local agent (llama.cpp serving SmolLM2-135M) works in the chat page like any other: a
real reply streams in, at desktop and phone widths, in English and 简体中文, with nothing spilling sideways."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import View, assert_no_sideways_scroll, thread_page

pytestmark = [pytest.mark.browser, pytest.mark.local_model]


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_real_reply_from_the_local_model(
    browser, e2e_server, local_model_server, width, height, language, screenshot
):
    slug = e2e_server.seed(
        "local_agent",
        base_url=local_model_server.base_url,
        context_window=local_model_server.context_window,
        api_key=local_model_server.api_key,
    )["agent"]
    thread_id = e2e_server.seed("thread", title="Local model", agent=slug)["thread_id"]
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language, timeout=60000)
    ) as page:
        question = "What is the capital of France?" if language == "en" else "法国的首都是哪里？"
        page.fill("#composer-input", question)
        page.keyboard.press("Enter")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded", timeout=60000)
        reply = page.locator("#transcript .message.role-assistant").last
        expect(reply).to_be_visible()
        assert reply.inner_text().strip(), "the local model's reply is empty"
        assert_no_sideways_scroll(page, width)
        reply.scroll_into_view_if_needed()
        screenshot(page, f"local-model-{language}-{width}")
