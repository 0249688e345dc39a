"""Helpers of the chat-experience browser tests: seeded threads, opening and sending, geometry."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.conversations.page_support import usage_at

LONG_REPLY = "Tell me everything about trains, " * 6  # the offline model echoes it back, word by word


def thread(server, title: str, messages: list[tuple[str, str]] | None = None) -> str:
    thread_id = server.seed("thread", title=title)["thread_id"]
    if messages:
        server.seed("messages", thread_id=thread_id, messages=messages)
    return thread_id


def open_thread(page, thread_id: str) -> None:
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")


def in_viewport(page, selector: str) -> bool:
    return page.evaluate(
        """(selector) => { const r = document.querySelector(selector).getBoundingClientRect();
           return r.top >= 0 && r.bottom <= window.innerHeight + 1; }""",
        selector,
    )


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def usage(ratio: float) -> dict:
    return usage_at(ratio)
