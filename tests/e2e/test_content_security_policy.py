"""Under the Content-Security-Policy every page still works in Chromium, with no violation reported:
the login page, the thread list, a thread (a message sent and answered over the socket), the admin and
the API docs, at 1366 and 390 px, in English and 简体中文."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import send_and_wait as _send
from tests.e2e.urls import PASSWORD, STAFF_PASSWORD, STAFF_USERNAME, USERNAME

pytestmark = pytest.mark.browser

# Recorded from inside the page (an init script is not subject to the page's policy).
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


def _context(browser, e2e_server, width: int, height: int):
    context = browser.new_context(base_url=e2e_server.base_url, viewport={"width": width, "height": height})
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.set_default_timeout(20000)
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    return context, page, console


def _violations(page, console: list[str]) -> list[str]:
    found = page.evaluate("window.__csp || []")
    return found + [line for line in console if "Content Security Policy" in line or "Refused to" in line]


def _login(page, username: str, password: str, language: str) -> None:
    page.goto("/accounts/login/")
    if language != "en":
        page.click(f"button[name=language][value={language}]")
    expect(page.locator("html")).to_have_attribute("lang", language)
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("main button[type=submit]")


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_pages_work_under_the_policy_with_no_violation(
    browser, e2e_server, width, height, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Policy check")["thread_id"]
    name = f"csp-{language}-{width}"
    context, page, console = _context(browser, e2e_server, width, height)
    seen: dict[str, list[str]] = {}
    try:
        _login(page, USERNAME, PASSWORD, language)
        page.wait_for_url(f"{e2e_server.base_url}/")
        expect(page.locator("form.new-thread")).to_be_visible()
        seen["list"] = _violations(page, console)
        screenshot(page, f"{name}-list")

        page.goto(f"/threads/{thread_id}/")
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        _send(page, "Hello under a strict policy.")
        seen["thread"] = _violations(page, console)
        screenshot(page, f"{name}-thread")
    finally:
        context.close()

    e2e_server.seed("staff")
    context, page, console = _context(browser, e2e_server, width, height)
    try:
        _login(page, STAFF_USERNAME, STAFF_PASSWORD, language)
        page.goto("/admin/")
        expect(page.locator("#site-name")).to_be_visible()
        page.goto("/admin/agent_platform/agent/add/")
        expect(page.locator("#agent_form")).to_be_visible()
        if width > 1000:  # the admin's scripts run: the collapsible fieldset opens
            toggles = page.locator("details summary")
            if toggles.count():
                toggles.first.click()
        page.goto("/admin/agent_platform/modelendpoint/add/")
        expect(page.locator("#modelendpoint_form")).to_be_visible()
        seen["admin"] = _violations(page, console)
        screenshot(page, f"{name}-admin")
        page.goto("/api/docs")
        expect(page.locator(".swagger-ui .info")).to_be_visible()
        seen["api docs"] = _violations(page, console)
        screenshot(page, f"{name}-docs")
    finally:
        context.close()

    assert {where: found for where, found in seen.items() if found} == {}
