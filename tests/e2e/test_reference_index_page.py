"""The reference index on the page (issue 25) at desktop and phone widths, in English and 简体中文: after
a compression, the memory panel lists what the agent can look up under the summary, nothing spills
sideways, and a pointer opens the file view at the line that holds its identifier."""

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

pytestmark = pytest.mark.browser

# More references than the offline model's summary keeps (40), and sizes it never keeps.
SOURCES = "Sources: " + ", ".join(
    f"https://docs.example.org/guide/part-{n}?lang=pt ({n + 2} MB)" for n in range(48)
)
# Plain notes the summary clips to a line: they make the fold clearly bigger than summary plus index, so
# the "never bigger" headroom (folded - summary) never squeezes the index out (it once left 0 listed).
NOTES = " ".join(
    f"Note {word}: we prefer walking between the old town squares and keeping the evenings free."
    for word in ("one", "two", "three", "four", "five", "six", "seven", "eight") * 8
)


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_memory_panel_shows_what_the_agent_can_look_up_and_a_pointer_opens_its_line(
    browser, e2e_server, width, height, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Lisbon sources")["thread_id"]
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language)
    ) as page:
        for text in (
            "We are planning a trip to Lisbon. " + SOURCES,
            "Ticket TRIP-4821 holds the bookings. " + NOTES,
            "Thanks.",
        ):
            send_and_wait(page, text)
        compress_now(page, thread_id)
        open_context(page)  # a drawer on a phone
        index = page.locator("#memory-index")
        expect(index).to_be_visible()
        index.locator("summary").click()
        first = index.locator("li").first
        expect(first).to_be_visible()
        # The index lists what the summary left out, bounded by its budget, not squeezed out by headroom.
        assert index.locator("li").count() >= 8, index.inner_text()
        expect(page.locator("#compression-status .loss-report")).to_contain_text(
            "reference index" if language == "en" else "引用索引"
        )
        assert_no_sideways_scroll(page, width)
        # Scrolled to in one call in the page (a locator's scroll_into_view_if_needed takes a handle first).
        index.evaluate("(e) => e.scrollIntoView({block: 'nearest'})")
        name = f"reference-index-{'zh-hans' if language != 'en' else 'en'}-{width}"
        keep = (language, width) in (("en", 1366), ("zh-hans", 390))  # the README's two
        if keep:
            screenshot(page, name)
        value = first.locator(".value").inner_text()
        href = first.locator("a.index-pointer").get_attribute("href")
        line = href.rsplit("#L", 1)[1]
        page.goto(href)
        target = page.locator(f"#L{line}")
        expect(target).to_be_in_viewport()
        assert value in target.inner_text()
        assert page.evaluate("getComputedStyle(document.querySelector(':target')).outlineStyle") == "solid"
        if keep:
            screenshot(page, name + "-file")
