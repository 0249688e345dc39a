"""Issue 31: the local agent (llama.cpp serving SmolLM2-135M) works in the chat page like any other: a
real reply streams in, at desktop and phone widths, in English and 简体中文, with nothing spilling sideways."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

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
    )["agent"]
    thread_id = e2e_server.seed("thread", title="Local model", agent=slug)["thread_id"]
    context = browser.new_context(base_url=e2e_server.base_url, viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(60000)
    try:
        page.goto("/accounts/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "pw-alice-123")
        page.click("main button[type=submit]")
        page.goto(f"/threads/{thread_id}/")
        if language != "en":
            page.click(f"button[name=language][value={language}]")
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        question = "What is the capital of France?" if language == "en" else "法国的首都是哪里？"
        page.fill("#composer-input", question)
        page.keyboard.press("Enter")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded", timeout=60000)
        reply = page.locator("#transcript .message.role-assistant").last
        expect(reply).to_be_visible()
        assert reply.inner_text().strip(), "the local model's reply is empty"
        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px"
        reply.scroll_into_view_if_needed()
        screenshot(page, f"local-model-{language}-{width}")
    finally:
        if language != "en":
            page.click("button[name=language][value=en]")
        context.close()
