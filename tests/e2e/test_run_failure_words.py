"""A failed run reads, on the thread page, as plain words in the reader's language: no endpoint,
environment variable or exception class (the admin keeps those), in Chromium at 1366 and 390 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import assert_no_sideways_scroll, restore_language, switch_language

pytestmark = [pytest.mark.browser, pytest.mark.layout]

INTERNAL = "Endpoint 'Internal vLLM' at https://llm.internal:8443/v1 has no key: set VLLM_API_KEY."
WORDS = {
    "en": "The agent's model is not set up correctly. An administrator can see why.",
    "zh-hans": "智能体的模型配置有误。管理员可以查看原因。",
}


@pytest.fixture
def failing_model(e2e_server):
    e2e_server.seed("failing_model", error=INTERNAL)
    yield
    e2e_server.seed("fast_model")


@pytest.mark.parametrize("width", [1366, 390])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_failed_run_shows_plain_words_and_no_internals(
    open_page, e2e_server, failing_model, width, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Model down")["thread_id"]
    page = open_page(width=width, height=844 if width < 500 else 900)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"/threads/{thread_id}/")
    switch_language(page, language)
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    page.fill("#composer-input", "Summarise the report, please.")
    page.press("#composer-input", "Enter")

    expect(page.locator("#run-status .status-failed")).to_contain_text(WORDS[language], timeout=20_000)
    expect(page.locator("#transcript .role-system").last).to_contain_text(WORDS["en"])  # stored as written
    text = page.locator("body").inner_text()
    for internal in ("VLLM_API_KEY", "llm.internal", "Internal vLLM", "ModelConfigurationError", "Error:"):
        assert internal not in text, internal
    assert_no_sideways_scroll(page, width)
    assert errors == []
    screenshot(page, f"run-failed-{language}-{width}")
    restore_language(page, language)
