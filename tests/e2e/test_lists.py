"""Issue 26, items 10–13 in Chromium at 1366 and 390 px, English and 简体中文: search inside messages,
the thread sidebar, agents explained (description, starter prompts, the offline model in the page's
language), "Shared with me" and the exports."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import BEYOND_CLIENT, assert_no_sideways_scroll, open_context, thread

pytestmark = [pytest.mark.browser, pytest.mark.layout]

VARIANTS = [("en", 1366), ("en", 390), ("zh-hans", 1366), ("zh-hans", 390)]
WORDS = {
    "en": {"shared": "Shared with me", "matches": "1 thread matches", "offline": "Offline model"},
    "zh-hans": {"shared": "与我共享", "matches": "1", "offline": "离线模型"},
}
STARTER = "What can you do for me?"


def _shot(page, name: str) -> None:
    """Every variant into E2E_SHOTS_DIR when set (for review)."""
    if review := os.environ.get("E2E_SHOTS_DIR"):
        Path(review).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(review) / f"{name}.png"), full_page=True)


def _page(open_page, e2e_server, lang: str, width: int, *, staff: bool = False):
    page = open_page(width=width, height=860, staff=staff)
    page.context.add_cookies([{"name": "django_language", "value": lang, "url": e2e_server.base_url}])
    return page


@pytest.fixture(scope="module")
def guide(e2e_server):
    e2e_server.seed(
        "agent",
        slug="guide",
        fields={
            "name": "Guide",
            "description": "Explains the handbook and answers in your language. 用你的语言回答。",
            "starter_prompts": f"{STARTER}\nSummarise the handbook",
        },
    )
    return "guide"


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_search_inside_messages_and_the_sidebar(open_page, e2e_server, guide, lang, width):
    word = f"zeppelin{width}{lang.replace('-', '')}"
    found = thread(
        e2e_server,
        f"Airships {lang} {width}",
        [
            ("user", f"Tell me about the {word} hangar"),
            ("assistant", f"The {word} hangar is in Friedrichshafen."),
        ],
    )
    other = thread(e2e_server, f"Other {lang} {width}", [("user", "Unrelated words")])
    page = _page(open_page, e2e_server, lang, width)
    page.goto("/")
    expect(page.locator("#agent-descriptions")).to_contain_text("Explains the handbook")
    page.fill("#thread-search", word)
    page.press("#thread-search", "Enter")
    rows = page.locator("table.threads tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(f"Airships {lang} {width}")
    expect(rows.first.locator(".search-snippet mark").first).to_have_text(word)
    expect(page.locator("#search-summary")).to_contain_text(WORDS[lang]["matches"])
    assert_no_sideways_scroll(page, width, measure=BEYOND_CLIENT)
    _shot(page, f"lists-search-{lang}-{width}")

    # The snippet opens the thread at the message that matched (issue 39), the title at its latest.
    hit = rows.first.locator("a.search-hit")
    expect(hit).to_have_attribute("href", re.compile(rf"/threads/{found}/#message-\d+$"))
    hit.click()
    page.wait_for_url(re.compile(rf"/threads/{found}/#message-\d+$"))
    anchor = page.url.rsplit("#", 1)[1]
    expect(page.locator(f"#{anchor}")).to_contain_text(word)
    sidebar = page.locator("#thread-sidebar")
    if width >= 1200:
        expect(sidebar).to_be_visible()
        current = sidebar.locator("a[aria-current=page]")
        expect(current).to_have_count(1)
        expect(current).to_contain_text(f"Airships {lang} {width}")
        titles = sidebar.locator(".sidebar-title").all_inner_texts()
        assert titles.index(f"Other {lang} {width}") < titles.index(
            f"Airships {lang} {width}"
        )  # newest first
        _shot(page, f"lists-sidebar-{lang}-{width}")
        sidebar.get_by_text(f"Other {lang} {width}").click()
        page.wait_for_url(re.compile(other))
        expect(page.locator("#thread-sidebar a[aria-current=page]")).to_contain_text(f"Other {lang} {width}")
    else:
        expect(sidebar).to_be_hidden()  # narrow screens switch threads on the list page
        assert found in page.url
        assert_no_sideways_scroll(page, width, measure=BEYOND_CLIENT)


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_an_empty_thread_explains_the_agent_and_a_starter_sends_in_the_page_language(
    open_page, e2e_server, guide, lang, width
):
    thread_id = e2e_server.seed("thread", agent=guide)["thread_id"]
    page = _page(open_page, e2e_server, lang, width)
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    intro = page.locator("#agent-intro")
    expect(intro).to_be_visible()
    expect(intro).to_contain_text("Explains the handbook")
    expect(intro.locator("button.starter")).to_have_count(2)
    assert_no_sideways_scroll(page, width, measure=BEYOND_CLIENT)
    _shot(page, f"lists-starters-{lang}-{width}")
    intro.get_by_role("button", name=STARTER).click()
    expect(page.locator("#transcript .message.role-user")).to_contain_text(STARTER)
    reply = page.locator("#transcript .message.role-assistant").last
    expect(reply).to_contain_text(WORDS[lang]["offline"], timeout=20000)
    expect(intro).to_be_hidden()
    _shot(page, f"lists-starter-reply-{lang}-{width}")


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_shared_with_me_lists_others_threads_for_a_viewer_only(open_page, e2e_server, lang, width):
    title = f"Alice's plan {lang} {width}"
    thread(e2e_server, title, [("user", "a private plan")])
    alice = _page(open_page, e2e_server, lang, width)
    alice.goto("/")
    expect(alice.locator("#scope-shared")).to_have_count(0)  # no such filter without the permission
    alice.goto("/?scope=shared")
    expect(alice.locator("h1")).not_to_contain_text(WORDS[lang]["shared"])

    root = _page(open_page, e2e_server, lang, width, staff=True)
    root.goto("/")
    expect(root.locator("table.threads")).not_to_contain_text(title)  # not root's own
    root.click("#scope-shared")
    expect(root.locator("h1")).to_have_text(WORDS[lang]["shared"])
    expect(root.locator("table.threads")).to_contain_text(title)
    if width >= 600:
        expect(root.locator("table.threads")).to_contain_text("alice")
    assert_no_sideways_scroll(root, width, measure=BEYOND_CLIENT)
    _shot(root, f"lists-shared-{lang}-{width}")
    root.get_by_role("link", name=title).click()
    expect(root.locator("#read-only")).to_be_visible()


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_the_thread_page_exports_markdown_and_json(open_page, e2e_server, lang, width):
    thread_id = thread(
        e2e_server, f"Export {lang} {width}", [("user", "Export me ```please```"), ("assistant", "Done.")]
    )
    page = _page(open_page, e2e_server, lang, width)
    page.goto(f"/threads/{thread_id}/")
    open_context(page)  # on a phone the export links sit in the drawer, with the thread's controls
    links = page.locator("#export-links")
    links.scroll_into_view_if_needed()
    expect(links).to_be_visible()
    _shot(page, f"lists-export-{lang}-{width}")
    with page.expect_download() as download:
        links.get_by_role("link", name="Markdown").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert download.value.suggested_filename.endswith(".md")
    assert (
        text.startswith(f"# Export {lang} {width}") and "Export me ```please```" in text and "Done." in text
    )
    with page.expect_download() as download:
        links.get_by_role("link", name="JSON").click()
    data = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert [m["content"] for m in data["messages"]] == ["Export me ```please```", "Done."]
