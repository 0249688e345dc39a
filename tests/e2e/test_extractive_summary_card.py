"""Issue 37 on the page: when the model's summary is refused (here the prompt echoed back, as SmolLM2
does), the compression card says the memory is an extractive summary and why, in English and 简体中文,
at desktop and phone widths, without sideways scroll."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import (
    View,
    assert_no_sideways_scroll,
    compress_now,
    open_context,
    send_and_wait,
    thread_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.layout]

NOTES = " ".join(
    f"Step {n}: the deploy of build B-{700 + n} to eu-west-{n % 3 + 1} finished in {n + 4} minutes."
    for n in range(40)
)


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_refused_summary_shows_as_a_labelled_extractive_one(
    browser, e2e_server, width, height, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Deploy log")["thread_id"]
    e2e_server.seed("echoing_summary")
    try:
        with thread_page(
            browser, e2e_server, thread_id, View(width=width, height=height, language=language)
        ) as page:
            for text in ("Here is the deploy log. " + NOTES, "And the rollback plan. " + NOTES, "Thanks."):
                send_and_wait(page, text)
            compress_now(page, thread_id)
            open_context(page)  # a drawer on a phone
            card = page.locator("#compression-status .summary-extractive")
            expect(card).to_be_visible()
            expect(card).to_have_attribute("data-summary-kind", "extractive")
            expect(card).to_contain_text("Extractive summary" if language == "en" else "抽取式摘要")
            # Why, in the page's language (the engine's own account stays in its title).
            expect(card.locator(".refusal")).to_have_text(
                "Why it was refused: it repeats the summary prompt's own instructions."
                if language == "en"
                else "拒绝原因：它照抄了摘要提示词自身的说明。"
            )
            assert_no_sideways_scroll(page, width)
            card.evaluate("(e) => e.scrollIntoView({block: 'center'})")
            if (language, width) in (("en", 1366), ("zh-hans", 390)):  # docs/compression.md's two
                screenshot(page, f"extractive-summary-{language}-{width}")
    finally:
        e2e_server.seed("fast_model")
