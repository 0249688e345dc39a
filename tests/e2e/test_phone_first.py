"""Issue 26, items 1, 8 and 14, in Chromium at 1366 and 390 px, in English and 简体中文: chat first on
the phone (the latest message and the composer in view on load and after a send; the context panel a
drawer opened from a compact meter that shows the hint), status that tells the truth (a dequeued
message leaves the finished reply "succeeded", the title follows live, an empty rename restores the
automatic title) and the keyboard (Esc, "/", Alt+Shift+N, the skip link)."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import (
    LONG_REPLY,
    View,
    assert_no_sideways_scroll,
    send,
    send_and_wait,
    settled_box,
    thread_page,
    usage,
)

pytestmark = [pytest.mark.browser, pytest.mark.layout]

SIZES = [(1366, 900), (390, 844)]
LANGUAGES = ["en", "zh-hans"]
WORDS = {
    "en": {"close": "Close", "new": "New thread", "untitled": "Untitled thread"},
    "zh-hans": {"close": "关闭", "new": "新建会话", "untitled": "未命名会话"},
}
EXCHANGES = [
    (role, f"{'Question' if role == 'user' else 'Answer'} {n}: " + "the coast, the old town and trains. " * 4)
    for n in range(12)
    for role in ("user", "assistant")
]


def _fully_in_view(page, locator) -> bool:
    """Whether ``locator`` is wholly inside the viewport once the page settles: the state panel re-renders
    live and the transcript scrolls to its latest message after load (once under load the meter was read
    in between). A place that stays off-screen for 3 s answers False."""
    deadline = time.monotonic() + 3.0
    while True:
        box = settled_box(locator)
        inside = box["y"] >= 0 and box["y"] + box["height"] <= page.viewport_size["height"] + 1
        if inside or time.monotonic() > deadline:
            return inside
        page.wait_for_timeout(100)


def _latest_and_composer_in_view(page) -> None:
    latest = page.locator("#transcript .message").last
    page.wait_for_function(
        """() => { const items = document.querySelectorAll('#transcript .message');
           const r = items[items.length - 1].getBoundingClientRect();
           return r.bottom <= window.innerHeight + 1 && r.bottom > 0; }"""
    )
    assert _fully_in_view(page, page.locator("#composer")), "the composer is off-screen"
    box = settled_box(latest)
    # The latest message ends in view, above the composer (a long one may begin above the fold).
    assert box["y"] + box["height"] <= page.locator("#composer").bounding_box()["y"] + 1


@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_thread_opens_and_stays_on_its_latest_message_and_the_panel_is_a_drawer_on_phones(
    browser, e2e_server, width, height, language, scheme, screenshot
):
    thread_id = e2e_server.seed("thread", title="Lisbon by train")["thread_id"]
    e2e_server.seed("messages", thread_id=thread_id, messages=EXCHANGES)
    e2e_server.seed("usage", thread_id=thread_id, usage=usage(0.9))
    phone = width < 900
    view = View(width=width, height=height, language=language, scheme=scheme)
    with thread_page(browser, e2e_server, thread_id, view) as page:
        page.reload()  # opened in the chosen language
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        _latest_and_composer_in_view(page)
        assert_no_sideways_scroll(page, width)
        if not phone:  # wide screens keep today's side panel, no drawer
            _the_side_panel_stays_beside_the_conversation(page)
            screenshot(page, f"thread-{language}-{width}-{scheme}")
        else:
            _the_compact_meter_shows_the_panels_figure_and_hint(page)
            screenshot(page, f"thread-{language}-{width}-{scheme}")
            _the_compact_meter_opens_the_drawer(page, view)
            screenshot(page, f"thread-drawer-{language}-{width}-{scheme}")
            _tab_stays_in_the_drawer_and_esc_or_the_backdrop_close_it(page, view)
            _the_threads_head(page, view)
            screenshot(page, f"thread-head-{language}-{width}-{scheme}")
        _a_send_keeps_the_latest_message_in_view(page, phone)


def _the_side_panel_stays_beside_the_conversation(page) -> None:
    expect(page.locator("#context-toggle")).to_be_hidden()
    expect(page.locator("#state-panel")).to_be_visible()
    assert _fully_in_view(page, page.locator("#state-panel .meter").first)


def _the_compact_meter_shows_the_panels_figure_and_hint(page) -> None:
    """On a phone the panel is hidden behind a compact meter, in view, showing its figure and hint."""
    toggle = page.locator("#context-toggle")
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#state-panel")).to_be_hidden()
    assert _fully_in_view(page, toggle), "the compact meter is off-screen"
    # The compact meter shows the panel's own figure and hint.
    ratio = page.locator("#pressure-ratio").text_content().strip()
    expect(page.locator("#context-toggle-ratio")).to_have_text(ratio)
    hint = " ".join(page.locator("#compression-hint p").first.text_content().split())
    expect(page.locator("#context-toggle-hint")).to_have_text(hint)


def _the_compact_meter_opens_the_drawer(page, view: View) -> None:
    """The drawer opens as a dialog, its close button focused, flush with the right edge."""
    toggle = page.locator("#context-toggle")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    drawer = page.locator("#context-drawer")
    expect(drawer).to_have_attribute("role", "dialog")
    expect(page.locator("#state-panel")).to_be_visible()
    close = page.locator("#context-close")
    expect(close).to_be_focused()
    expect(close).to_have_text(WORDS[view.language]["close"])
    page.wait_for_function(
        "() => Math.abs(document.getElementById('context-drawer').getBoundingClientRect().right"
        " - window.innerWidth) < 1"
    )
    assert_no_sideways_scroll(page, view.width)


def _tab_stays_in_the_drawer_and_esc_or_the_backdrop_close_it(page, view: View) -> None:
    toggle = page.locator("#context-toggle")
    # Tab stays inside the open drawer.
    for _ in range(12):
        page.keyboard.press("Tab")
        assert page.evaluate("document.getElementById('context-drawer').contains(document.activeElement)")
    page.keyboard.press("Escape")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#state-panel")).to_be_hidden()
    expect(toggle).to_be_focused()
    # The backdrop closes it too.
    toggle.click()
    expect(page.locator("#state-panel")).to_be_visible()
    page.mouse.click(10, view.height - 200)
    expect(page.locator("#state-panel")).to_be_hidden()


def _the_threads_head(page, view: View) -> None:
    """The thread's head: title, new thread, live status, then the compact meter."""
    page.evaluate("window.scrollTo(0, 0)")
    expect(page.locator("#new-thread-button")).to_be_visible()
    assert_no_sideways_scroll(page, view.width)


def _a_send_keeps_the_latest_message_in_view(page, phone: bool) -> None:
    send_and_wait(page, "One more question about the night trains, please.")
    _latest_and_composer_in_view(page)
    expect(page.locator("#transcript .message.role-assistant").last).to_contain_text("night trains")
    if phone:
        toggle = page.locator("#context-toggle")
        assert _fully_in_view(page, toggle), "the compact meter is off-screen"
        # The run re-measured the thread: the compact meter follows the re-rendered panel.
        ratio = page.locator("#pressure-ratio").text_content().strip()
        expect(page.locator("#context-toggle-ratio")).to_have_text(ratio)
        hint = page.locator("#compression-hint")
        expect(page.locator("#context-toggle-hint")).to_be_visible(visible=hint.count() > 0)


@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_status_tells_the_truth_title_live_and_empty_rename(
    browser, e2e_server, slow_model, width, height, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="")["thread_id"]
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language)
    ) as page:
        expect(page.locator("#thread-title")).to_have_text(WORDS[language]["untitled"])
        send(page, "Plan a weekend in Porto\n" + LONG_REPLY)
        # The first message names the thread on the open page, over the socket (no reload).
        expect(page.locator("#thread-title")).to_have_text("Plan a weekend in Porto")
        expect(page).to_have_title("Plan a weekend in Porto")
        expect(page.locator("#stream-body")).to_contain_text("trains", timeout=20000)
        send(page, "drop this one")
        dropped = page.locator("#transcript .message.role-user", has_text="drop this one")
        dropped.locator(".dequeue button").click()
        expect(dropped.locator(".badge-cancelled")).to_be_visible()
        # The reply that was running finishes normally: it reads so, not "Stopped".
        expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded", timeout=40000)
        expect(page.locator("#run-status .status-cancelled")).to_have_count(0)
        page.reload()
        expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded")
        expect(page.locator("#run-status .status-cancelled")).to_have_count(0)

        # Renaming to empty restores the automatic title.
        page.locator(".rename summary").click()
        page.fill("#rename-input", "My own name")
        page.locator(".rename-form button").click()
        expect(page.locator("#thread-title")).to_have_text("My own name")
        page.locator(".rename summary").click()
        page.fill("#rename-input", "")
        page.locator(".rename-form button").click()
        expect(page.locator("#thread-title")).to_have_text("Plan a weekend in Porto")
        assert_no_sideways_scroll(page, width)
        screenshot(page, f"thread-title-{language}-{width}")


@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_keys_stop_focus_new_thread_and_the_skip_link(
    browser, e2e_server, slow_model, width, height, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Keys")["thread_id"]
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language)
    ) as page:
        composer = page.locator("#composer-input")
        # The skip link is the first stop and lands in the message box.
        page.reload()  # focus starts at the top of the document
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        page.keyboard.press("Tab")
        expect(page.locator(".skip-link")).to_be_focused()
        page.keyboard.press("Enter")
        expect(composer).to_be_focused()

        # "/" focuses the message box from anywhere but a text field (where it is typed).
        page.locator("#thread-title").click()
        page.keyboard.press("/")
        expect(composer).to_be_focused()
        page.keyboard.press("/")
        expect(composer).to_have_value("/")
        expect(composer).to_have_attribute("aria-keyshortcuts", "/")

        send(page, LONG_REPLY)
        expect(page.locator("#stream-body")).to_contain_text("trains", timeout=20000)
        expect(page.locator("#stop-button")).to_have_attribute("aria-keyshortcuts", "Escape")
        if width < 900:  # Esc closes the open drawer first: the reply goes on
            page.locator("#context-toggle").click()
            expect(page.locator("#state-panel")).to_be_visible()
            page.keyboard.press("Escape")
            expect(page.locator("#state-panel")).to_be_hidden()
            expect(page.locator("#run-status")).to_have_attribute("data-status", "running")
        else:
            expect(page.locator("#keys-hint")).to_be_visible()
            screenshot(page, f"thread-keys-{language}-{width}")
        page.keyboard.press("Escape")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "cancelled", timeout=20000)
        expect(page.locator("#transcript .message.role-assistant.interrupted")).to_have_count(1)

        new = page.locator("#new-thread-button")
        expect(new).to_have_text(WORDS[language]["new"])
        expect(new).to_have_attribute("aria-keyshortcuts", "Alt+Shift+N")
        page.locator("#thread-title").click()
        page.keyboard.press("Alt+Shift+N")
        page.wait_for_url(lambda url: thread_id not in url and re.search(r"/threads/[0-9a-f-]{36}/$", url))
        expect(page.locator("#thread-title")).to_have_text(WORDS[language]["untitled"])
        expect(page.locator("#transcript-empty")).to_be_visible()
        assert_no_sideways_scroll(page, width)
