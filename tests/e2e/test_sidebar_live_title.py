"""The thread sidebar follows the open thread's title live (issue 26 follow-up), in Chromium at 1366
and 390 px, English and 简体中文: the first message names the thread, a rename in another tab, and an
empty rename that restores the automatic title all show in the sidebar's entry without a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import View, send_and_wait, thread_page

pytestmark = pytest.mark.browser

UNTITLED = {"en": "Untitled thread", "zh-hans": "未命名会话"}


def _rename(page, title: str) -> None:
    page.locator(".rename summary").click()
    page.fill("#rename-input", title)
    page.locator(".rename-form button").click()


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_sidebar_entry_follows_the_title_live(browser, e2e_server, width, height, language, screenshot):
    other_title = f"Other thread {language} {width}"  # the e2e database is shared by the tests
    e2e_server.seed("thread", title=other_title)
    thread_id = e2e_server.seed("thread", title="")["thread_id"]
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language)
    ) as page:
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        sidebar = page.locator("#thread-sidebar")
        current = sidebar.locator("a[aria-current=page] .sidebar-title")
        other = sidebar.locator(".sidebar-title", has_text=other_title)
        expect(current).to_have_text(UNTITLED[language])
        if width < 900:
            expect(sidebar).to_be_hidden()  # wide screens only; its entry is kept true all the same

        send_and_wait(page, "Plan a weekend in Porto")  # the first message names the thread
        expect(current).to_have_text("Plan a weekend in Porto")
        expect(other).to_have_count(1)

        other_tab = page.context.new_page()
        other_tab.goto(f"/threads/{thread_id}/")
        _rename(other_tab, "Porto, two days")
        expect(other_tab.locator("#thread-title")).to_have_text("Porto, two days")
        expect(current).to_have_text("Porto, two days")  # arrived over the socket, no reload
        expect(page.locator("#thread-title")).to_have_text("Porto, two days")
        if width >= 900:
            screenshot(page, f"sidebar-live-title-{language}-{width}")
        _rename(other_tab, "")  # empty: the automatic title comes back
        expect(current).to_have_text("Plan a weekend in Porto")
        expect(other).to_have_count(1)
        other_tab.close()
        assert errors == []
