"""The connection banner, sends that cannot reach the server, thread titles, search and deletion,
the keyboard and the favicon, in Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import open_thread, send, thread

pytestmark = pytest.mark.browser


TRACK_SOCKETS = """
window.__sockets = [];
const NativeWebSocket = window.WebSocket;
window.WebSocket = function (...args) { const s = new NativeWebSocket(...args); window.__sockets.push(s); return s; };
window.WebSocket.prototype = NativeWebSocket.prototype;
"""


def test_a_banner_says_when_live_updates_drop_and_when_they_return(page, e2e_server):
    page.add_init_script(TRACK_SOCKETS)
    open_thread(page, thread(e2e_server, "Banner"))
    banner = page.locator("#connection-banner")
    expect(banner).to_be_hidden()
    shown = page.evaluate(
        """() => new Promise((resolve) => {
             const banner = document.getElementById('connection-banner');
             const seen = [];
             new MutationObserver(() => seen.push(banner.textContent)).observe(
               banner, {childList: true, characterData: true, subtree: true});
             window.__sockets.at(-1).close();
             setTimeout(() => resolve(seen.join(' | ')), 1500);
           })"""
    )
    assert "disconnected" in shown
    expect(page.locator("#socket-status")).to_contain_text(re.compile("Offline|Connecting|Live"))
    expect(banner).to_contain_text("back")
    expect(page.locator("#socket-status")).to_contain_text("Live")
    expect(banner).to_be_hidden(timeout=10000)  # the notice clears once the condition has ended


def test_a_send_that_cannot_reach_the_server_says_not_sent_and_keeps_the_draft(page, e2e_server):
    open_thread(page, thread(e2e_server, "Offline send"))
    page.route(re.compile(r".*/threads/.*/messages$"), lambda route: route.abort())
    send(page, "please keep me")
    expect(page.locator("#composer-error")).to_contain_text("Not sent")
    expect(page.locator("#composer-input")).to_have_value("please keep me")
    expect(page.locator("#transcript .message.role-user")).to_have_count(0)
    page.unroute(re.compile(r".*/threads/.*/messages$"))
    page.click("#composer button[type=submit]")
    expect(page.locator("#transcript .message.role-user")).to_have_count(1)
    expect(page.locator("#composer-error")).to_have_text("")


def test_auto_title_rename_search_and_delete_with_confirmation(page, e2e_server):
    page.select_option("select[name=agent]", "assistant")
    page.click("text=New thread")
    page.wait_for_url(re.compile(r"/threads/[0-9a-f-]+/$"))
    send(page, "Plan a weekend in Porto\nwith trains only")
    expect(page.locator("#transcript .message.role-assistant")).to_have_count(1)
    page.reload()
    expect(page.locator("h1")).to_have_text("Plan a weekend in Porto")

    page.click(".rename summary")
    page.fill("#rename-input", "Porto weekend")
    page.click(".rename-form button")
    expect(page.locator("h1")).to_have_text("Porto weekend")

    page.goto("/?q=porto")
    expect(page.locator("table.threads tbody tr")).to_have_count(1)
    expect(page.locator("table.threads")).to_contain_text("Porto weekend")
    page.goto("/?q=no-such-title")
    expect(page.locator("table.threads")).to_contain_text("No thread title or message contains that.")

    page.goto("/?q=porto")
    page.click("text=Porto weekend")
    page.click("text=Delete thread…")
    expect(page.locator("h1")).to_have_text("Delete this thread?")
    page.click("text=Cancel")  # nothing happens without confirming
    expect(page.locator("h1")).to_have_text("Porto weekend")
    page.click("text=Delete thread…")
    page.click("main button.danger")
    page.wait_for_url(re.compile(r"/$"))
    expect(page.locator("table.threads")).not_to_contain_text("Porto weekend")


def test_keyboard_only_send_with_a_visible_focus(page, e2e_server):
    open_thread(page, thread(e2e_server, "Keyboard"))
    # The first Tab is "Skip to content", which takes a keyboard user straight to the composer past the
    # header, the sidebar's threads (as many as the user has) and the thread's own controls.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('skip-link')")
    page.keyboard.press("Enter")
    expect(page.locator("#composer-input")).to_be_focused()
    focused = page.evaluate("getComputedStyle(document.getElementById('composer')).boxShadow")
    assert focused != "none"
    page.keyboard.type("Sent with the keyboard")
    page.keyboard.press("Enter")
    expect(page.locator("#transcript .message.role-user")).to_contain_text("Sent with the keyboard")
    # The run's end re-renders the composer's buttons (Stop gives way to Send): tab once it is over, or a
    # loaded machine tabs through the buttons of the run still going.
    expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded")
    expect(page.locator("#composer-input")).to_be_focused()
    page.keyboard.press("Tab")  # "Attach files" comes first, with a visible focus of its own
    assert page.evaluate("document.activeElement.id") == "composer-files"
    assert page.evaluate("getComputedStyle(document.activeElement.closest('label')).outlineStyle") != "none"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent.trim()") == "Send"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"


def test_the_favicon_is_served_on_every_page(page, e2e_server):
    response = page.request.get("/favicon.ico")
    assert response.ok and "svg" in response.headers["content-type"]
    assert page.locator("link[rel=icon]").count() == 1
