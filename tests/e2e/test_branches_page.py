"""Branches in Chromium (issue 39 item 2): an earlier version opens its whole branch read-only, is made
current again ("Continue from this version"), is forked into a new thread up to a message; the page
numbers what it shows without holes; a search hit in an earlier version opens at its message.
English and 简体中文, 1366 and 390 px; the thread is seeded through the services."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import (
    assert_no_sideways_scroll,
    open_context,
    restore_language,
    thread_in,
)

pytestmark = [pytest.mark.browser, pytest.mark.layout]

WORDS = {
    "en": {"continued": "This version is the current one again", "forked": "A new thread of yours"},
    "zh-hans": {"continued": "此版本重新成为当前版本", "forked": "已新建一个属于你的会话"},
}


def _numbers(page) -> list[int]:
    return [int(text.lstrip("#")) for text in page.locator("#transcript .seq-number").all_inner_texts()]


@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize("width", [1366, 390])
def test_an_earlier_branch_is_read_continued_and_forked(open_page, e2e_server, width, language, screenshot):
    thread_id = e2e_server.seed("thread", title="Lisbon trip")["thread_id"]
    said = ["We plan a trip to Lisbon.", "Which museums should we see?", "And the old trams?"]
    e2e_server.seed("branched", thread_id=thread_id, said=said, edit=[1, "Which beaches should we see?"])
    page, errors = thread_in(open_page, thread_id, width=width, language=language)
    words = WORDS[language]

    # The page numbers what it shows, 1..n, though the transcript's rows have holes now.
    expect(page.locator("#transcript li.message")).to_have_count(4)
    assert _numbers(page) == [1, 2, 3, 4]

    # Version 1 of the edited message links to its whole branch: all six messages, read-only.
    edited = page.locator("#transcript li.message.role-user").nth(1)
    edited.locator(".version-prev").click()
    edited.locator(".version-branch").click()
    expect(page.locator("#branch")).to_have_attribute("data-current", "0")
    expect(page.locator("#transcript li.message")).to_have_count(6)
    expect(page.locator("#transcript")).to_contain_text("And the old trams?")
    assert _numbers(page) == [1, 2, 3, 4, 5, 6]
    expect(page.locator("#transcript .edit-open, #transcript .pin-toggle")).to_have_count(0)
    expect(page.locator("li.message.branch-target")).to_be_visible()
    assert_no_sideways_scroll(page, width)
    screenshot(page, f"branch-earlier-{language}-{width}")

    # Continue from this version: the thread page shows that branch again, numbered 1..6.
    with page.expect_navigation():
        page.locator("#branch-continue button[type=submit]").click()
    expect(page.locator(".flash")).to_contain_text(words["continued"])
    expect(page.locator("#transcript")).to_contain_text("And the old trams?")
    expect(page.locator("#transcript li.message")).to_have_count(6)
    second = page.locator("#transcript li.message.role-user").nth(1)
    expect(second.locator(":scope > .message-body")).to_have_text("Which museums should we see?")
    expect(second.locator(".version-label")).to_have_text("1/2")  # the edit stays, as version 2
    assert _numbers(page) == [1, 2, 3, 4, 5, 6]
    assert_no_sideways_scroll(page, width)
    screenshot(page, f"branch-continued-{language}-{width}")

    # A search hit in the branch that left opens at its message there.
    page.goto("/?q=beaches")
    page.locator("a.search-hit").first.click()
    expect(page.locator("#branch")).to_have_attribute("data-current", "0")
    expect(page.locator("li.message.branch-target")).to_contain_text("beaches")

    # Fork the current branch into a new thread, up to its first reply.
    page.goto(f"/threads/{thread_id}/")
    open_context(page)
    page.locator("#fork-open").click()
    expect(page.locator("#branch")).to_have_attribute("data-current", "1")
    with page.expect_navigation():
        page.locator("#transcript li.message").nth(1).locator("form.branch-fork button").click()
    expect(page.locator(".flash")).to_contain_text(words["forked"])
    assert re.search(r"/threads/[0-9a-f-]+/$", page.url) and thread_id not in page.url
    expect(page.locator("#transcript li.message")).to_have_count(2)
    expect(page.locator("#composer")).to_be_visible()  # the fork is the reader's own thread
    # The copied reply opened no run here: nothing to regenerate (the composer sends the next turn).
    expect(page.locator("#transcript .regenerate")).to_have_count(0)
    assert_no_sideways_scroll(page, width)
    screenshot(page, f"branch-forked-{language}-{width}")
    assert errors == []
    restore_language(page, language)
