"""Helpers of the chat-experience browser tests: logging in, a page per viewport and language, seeded
threads, opening and sending, geometry."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from playwright.sync_api import expect

from tests.conversations.page_support import usage_at

LONG_REPLY = "Tell me everything about trains, " * 6  # the offline model echoes it back, word by word
USERS = {"alice": "pw-alice-123", "root": "pw-root-123"}
# Long enough that a summary of these messages is smaller than they are (issue 24: never bigger).
TRIP_DETAIL = " We want the old town, the museums, the coast and day trips by train." * 6


def log_in(page, username: str = "alice", password: str | None = None) -> None:
    page.goto("/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password or USERS[username])
    page.click("main button[type=submit]")


@dataclass(frozen=True)
class View:
    """How a test page is opened: its viewport, interface language, colour scheme and default timeout."""

    width: int = 1366
    height: int = 900
    language: str = "en"
    scheme: str = "light"
    timeout: int = 20000


def new_page(browser, server, view: View = View(), *, signed_in: str | None = None):
    """A page in a fresh browser context (closed with ``page.context.close()``), signed in as
    ``signed_in`` when given (the server's cookies of that user, see ``Server.signed_in``)."""
    context = browser.new_context(
        base_url=server.base_url,
        viewport={"width": view.width, "height": view.height},
        color_scheme=view.scheme,
        storage_state=server.signed_in(browser, signed_in) if signed_in else None,
    )
    page = context.new_page()
    page.set_default_timeout(view.timeout)
    return page


def phone_height(width: int) -> int:
    return 844 if width < 500 else 900


def switch_language(page, language: str) -> None:
    """Choose the interface language with the header's switch (stored on the user: undo it at the end)."""
    if language == "en":
        return
    page.click(f"button[name=language][value={language}]")
    expect(page.locator("html")).to_have_attribute("lang", language)


def restore_language(page, language: str) -> None:
    """Back to English for the next test (the choice is stored on the user)."""
    if language == "en":
        return
    page.goto("/")  # a page whose switch is there and not behind an open drawer
    page.click("button[name=language][value=en]")


@contextmanager
def thread_page(browser, server, thread_id: str, view: View = View()) -> Iterator:
    """Alice's page on the thread in a fresh context, opened as ``view`` says (viewport, language, scheme,
    timeout), its socket open; afterwards the language is set back to English and the context closed."""
    page = new_page(browser, server, view, signed_in="alice")
    try:
        page.goto(f"/threads/{thread_id}/")
        switch_language(page, view.language)
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        yield page
    finally:
        try:
            restore_language(page, view.language)
        finally:
            page.context.close()


def thread(server, title: str, messages: list[tuple[str, str]] | None = None) -> str:
    thread_id = server.seed("thread", title=title)["thread_id"]
    if messages:
        server.seed("messages", thread_id=thread_id, messages=messages)
    return thread_id


def open_thread(page, thread_id: str) -> None:
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")


def thread_in(open_page, thread_id: str, *, width: int, language: str) -> tuple[Any, list[str]]:
    """Alice's page (from the ``open_page`` fixture) on the thread at ``width`` (a phone's height below
    500 px), in ``language``, its socket open; and the list its uncaught script errors are added to."""
    page = open_page(width=width, height=phone_height(width))
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"/threads/{thread_id}/")
    switch_language(page, language)
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    return page, errors


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")


def send_and_wait(page, text: str) -> None:
    """Send a message and wait for the run to finish with a written answer (tool calls in between)."""
    last = page.evaluate(
        "() => { const i = document.querySelectorAll('#transcript [data-seq]');"
        " return i.length ? Number(i[i.length - 1].dataset.seq) : 0; }"
    )
    send(page, text)
    page.wait_for_function(
        """(last) => {
          const replies = document.querySelectorAll('#transcript .message.role-assistant');
          const reply = replies[replies.length - 1];
          const panel = document.getElementById('state-panel');
          return reply && Number(reply.dataset.seq) > last && reply.querySelector('.message-body')
            && document.getElementById('run-status').dataset.status === 'succeeded'
            && panel.dataset.running === 'false' && panel.dataset.queued === 'false';
        }""",
        arg=last,
        timeout=30000,
    )


def plan_a_trip(page, last: str) -> None:
    """Three exchanges about a trip: two long ones a summary can shrink, then ``last``."""
    for text in ("We are planning a trip to Lisbon." + TRIP_DETAIL, "I prefer trains." + TRIP_DETAIL, last):
        send_and_wait(page, text)


def in_viewport(page, selector: str) -> bool:
    return page.evaluate(
        """(selector) => { const r = document.querySelector(selector).getBoundingClientRect();
           return r.top >= 0 && r.bottom <= window.innerHeight + 1; }""",
        selector,
    )


def settled_box(locator, *, timeout: float = 10.0) -> dict:
    """``locator``'s box once it is visible. A live re-render can replace the element between a wait and
    the read, and ``bounding_box()`` answers None for a node that is detached or hidden at that moment
    (once under load, the Retry button's): wait and read again until the box is there."""
    deadline = time.monotonic() + timeout
    while True:
        locator.wait_for(state="visible", timeout=max(deadline - time.monotonic(), 0.1) * 1000)
        box = locator.bounding_box()
        if box is not None:
            return box
        assert time.monotonic() < deadline, f"{locator} never stayed visible long enough to be measured"
        locator.page.wait_for_timeout(50)


_SIDEWAYS = "document.scrollingElement.scrollWidth - window.innerWidth"
BEYOND_CLIENT = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


def assert_no_sideways_scroll(page, width: int, *, measure: str = _SIDEWAYS) -> None:
    """The page does not scroll sideways at ``width``, measured once the layout settles: a re-render in
    flight (a rename's) overflowed for a moment on a loaded machine, 22 px once in a CI run. An overflow
    that stays (2 s) fails. Polled with ``evaluate`` from here: ``wait_for_function`` compiles its
    expression in the page, which the pages' CSP (no 'unsafe-eval') refuses."""
    deadline = time.monotonic() + 2.0
    while (overflow := page.evaluate(measure)) > 0 and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px"


def overflow(page) -> int:
    return page.evaluate(BEYOND_CLIENT)


def usage(ratio: float) -> dict:
    return usage_at(ratio)


def compress_now(page, thread_id: str) -> None:
    """Compress the thread through the API (waiting for the summary), then reload the page on it."""
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"/api/threads/{thread_id}/compress?wait=true", headers={"X-CSRFToken": csrf}
    )
    assert response.ok, response.text()
    reload_settled(page)
    expect(page.locator("#memory-panel")).to_have_attribute("data-summary", "true")


STATE_FRAGMENT = re.compile(r"/fragments/state$")
FIRST_RENDER = "data-e2e-first-render"


def reload_settled(page) -> None:
    """Reload the thread page and return once its panels are the final ones. When the socket opens, the
    page fetches the state fragment and swaps every panel in it (meter, compression card, memory panel,
    run status) for a fresh element: a test acting on the first render's elements meanwhile acts on a
    node that is about to leave the DOM ("element is not attached"). That fetch is held here until the
    first render's state panel is marked, then let go; the swap (one synchronous loop over the panels)
    has happened once the marked panel is gone."""
    held: list = []
    released = False

    def hold(route) -> None:
        if released:
            route.continue_()
        else:
            held.append(route)

    page.route(STATE_FRAGMENT, hold)
    try:
        page.reload()
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        deadline = time.monotonic() + 20
        while not held:
            assert time.monotonic() < deadline, "the page did not refresh its panels once its socket opened"
            page.wait_for_timeout(50)
        page.locator("#state-panel").evaluate(f"(panel) => panel.setAttribute('{FIRST_RENDER}', '')")
    finally:
        released = True
        for route in held:
            route.continue_()
        page.unroute(STATE_FRAGMENT, hold)
    expect(page.locator(f"#state-panel[{FIRST_RENDER}]")).to_have_count(0)


def open_context(page) -> None:
    """Open the context drawer where the panel is one (narrow screens); a no-op beside a side panel."""
    # After a form post's navigation the stylesheets may still be loading: the toggle is visible for a
    # moment on a wide screen, then hidden. Decide once the page has loaded.
    page.wait_for_load_state("load")
    toggle = page.locator("#context-toggle")
    if toggle.is_visible() and toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
        expect(page.locator("#context-drawer")).to_have_attribute("role", "dialog")
        _drawer_settled(page)


def close_context(page) -> None:
    """Close the context drawer if it is open (the conversation behind it is inert meanwhile)."""
    if page.locator("#context-toggle").get_attribute("aria-expanded") == "true":
        page.locator("#context-close").click()
        expect(page.locator("#context-toggle")).to_have_attribute("aria-expanded", "false")
        _drawer_settled(page)


def _drawer_settled(page) -> None:
    """The drawer's slide has ended (a screenshot taken mid-slide shows it half open)."""
    page.locator("#context-drawer").evaluate("(e) => Promise.all(e.getAnimations().map((a) => a.finished))")
