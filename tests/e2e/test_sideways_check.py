"""The browser tests' one sideways-scroll check (``assert_no_sideways_scroll``) waits for a layout in
flight to settle, and still fails on an overflow that stays, on the platform's own page: its CSP refuses
'unsafe-eval', which Playwright's ``wait_for_function`` needs once it has to poll (a CI run met that)."""

from __future__ import annotations

import pytest

from tests.e2e.chat_support import BEYOND_CLIENT, assert_no_sideways_scroll

pytestmark = [pytest.mark.browser, pytest.mark.layout]

WIDEN = """() => { const wide = document.createElement('div'); wide.id = 'wide';
  wide.style.cssText = 'width: 3000px; height: 10px'; document.body.append(wide); return wide.id; }"""


@pytest.fixture
def home(open_page):
    page = open_page(width=390, height=844)
    page.goto("/")
    return page


@pytest.mark.parametrize("measure", [None, BEYOND_CLIENT])
def test_an_overflow_that_stays_fails(home, measure):
    home.evaluate(WIDEN)
    with pytest.raises(AssertionError, match=r"scrolls sideways by \d+px at 390px"):
        assert_no_sideways_scroll(home, 390, **({"measure": measure} if measure else {}))


def test_an_overflow_gone_within_the_settling_time_passes(home):
    home.evaluate(WIDEN)
    home.evaluate("() => setTimeout(() => document.getElementById('wide').remove(), 300)")
    assert home.evaluate("document.scrollingElement.scrollWidth - window.innerWidth") > 0
    assert_no_sideways_scroll(home, 390)


def test_a_page_that_fits_passes_at_once(home):
    assert_no_sideways_scroll(home, 390)
    assert_no_sideways_scroll(home, 390, measure=BEYOND_CLIENT)
