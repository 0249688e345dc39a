"""The browser tests' one sideways-scroll check (``assert_no_sideways_scroll``) waits for a layout in
flight to settle, and still fails on an overflow that stays."""

from __future__ import annotations

import pytest

from tests.e2e.chat_support import assert_no_sideways_scroll

pytestmark = pytest.mark.browser

WIDE = '<div id="wide" style="width: 3000px; height: 10px"></div>'


@pytest.fixture
def bare_page(browser):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    yield context.new_page()
    context.close()


def test_an_overflow_that_stays_fails(bare_page):
    bare_page.set_content(f"<body>{WIDE}</body>")
    with pytest.raises(AssertionError, match=r"scrolls sideways by \d+px at 390px"):
        assert_no_sideways_scroll(bare_page, 390)


def test_an_overflow_gone_within_the_settling_time_passes(bare_page):
    bare_page.set_content(
        f"<body>{WIDE}<script>setTimeout(() => document.getElementById('wide').remove(), 300)</script></body>"
    )
    assert bare_page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth") > 0
    assert_no_sideways_scroll(bare_page, 390)


def test_a_page_that_fits_passes_at_once(bare_page):
    bare_page.set_content("<body><p>Fits.</p></body>")
    assert_no_sideways_scroll(bare_page, 390)
