"""The thread list on a phone and a sidebar people live in (issue 39, items 5 and 7), in Chromium at 1366
and 390 px, in English and 简体中文: threads come first with the agents one tap away and no "No
description yet."; the sidebar (wide screens) searches, groups by date, pins, renames, archives and
deletes; the bin restores; a thread in the bin answers a friendly 404 that offers the restore; a reader
of someone else's thread sees it in the sidebar, not "No threads yet."."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import assert_no_sideways_scroll

pytestmark = [pytest.mark.browser, pytest.mark.layout]

VARIANTS = [("en", 1366), ("en", 390), ("zh-hans", 1366), ("zh-hans", 390)]
WORDS = {
    "en": {"agents": "About the {n} agents", "pinned": "Pinned", "today": "Today", "pin": "Pin",
           "archive": "Archive", "delete": "Delete", "restore": "Restore", "rename": "Rename",
           "reading": "Reading", "no_threads": "No threads yet.", "bin_title": "Bin",
           "missing": "This thread is not here", "deleted": "stays in the bin"},
    "zh-hans": {"agents": "了解这 {n} 个智能体", "pinned": "已置顶", "today": "今天", "pin": "置顶",
                "archive": "归档", "delete": "删除", "restore": "恢复", "rename": "重命名",
                "reading": "正在阅读", "no_threads": "还没有会话", "bin_title": "回收站",
                "missing": "这个会话不在这里", "deleted": "回收站保留"},
}  # fmt: skip


def _shot(page, name: str) -> None:
    if review := os.environ.get("E2E_SHOTS_DIR"):
        Path(review).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(review) / f"{name}.png"), full_page=False)


def _page(open_page, e2e_server, lang: str, width: int, *, staff: bool = False):
    page = open_page(width=width, height=844 if width < 500 else 900, staff=staff)
    page.context.add_cookies([{"name": "django_language", "value": lang, "url": e2e_server.base_url}])
    return page


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_the_list_puts_threads_first_with_the_agents_one_tap_away(open_page, e2e_server, lang, width):
    tag = f"{lang}-{width}"
    for index in range(3):  # with the demo's agent: at least four agents, one without a description
        description = "" if index == 0 else f"Agent number {index} explains things at length. " * 3
        e2e_server.seed(
            "agent", slug=f"phone-{index}", fields={"name": f"Phone {index}", "description": description}
        )
    e2e_server.seed("thread", title=f"First on the phone {tag}")
    page = _page(open_page, e2e_server, lang, width)
    page.goto("/")
    first = page.locator("table.threads tbody tr").first
    expect(first).to_contain_text(f"First on the phone {tag}")
    box = first.bounding_box()
    assert box["y"] + box["height"] <= 844 * 0.6, box  # in view without scrolling, high on the screen
    expect(page.locator("body")).not_to_contain_text("No description yet.")
    expect(page.locator("body")).not_to_contain_text("暂无描述")
    # The server is shared within a worker and other tests seed agents too: the link counts the agents
    # the page lists (each usable agent, once), however many there are.
    usable = page.locator("#agents dt").count()
    assert usable >= 4, usable
    link = page.locator(".agents-link a")
    expect(link).to_have_text(WORDS[lang]["agents"].format(n=usable))
    assert_no_sideways_scroll(page, width)
    _shot(page, f"phone-list-{tag}")
    link.click()
    agents = page.locator("#agents")
    expect(agents).to_be_in_viewport()
    expect(agents.locator("dt", has_text="Phone 0")).to_be_visible()
    expect(agents.locator("div", has_text="Phone 0").locator("dd")).to_have_count(0)  # no placeholder
    _shot(page, f"phone-list-agents-{tag}")


def _menu(page, title: str):
    item = page.locator("#thread-sidebar .sidebar-item", has=page.locator(".sidebar-title", has_text=title))
    item.locator("summary").click()
    return item


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_the_sidebar_searches_groups_pins_renames_archives_and_deletes(open_page, e2e_server, lang, width):
    words, tag = WORDS[lang], f"{lang}-{width}"
    keep = e2e_server.seed("thread", title=f"Keep {tag}")["thread_id"]
    e2e_server.seed("thread", title=f"Pin me {tag}")
    e2e_server.seed("thread", title=f"Box me {tag}")
    gone = e2e_server.seed("thread", title=f"Bin me {tag}")["thread_id"]
    page = _page(open_page, e2e_server, lang, width)
    page.goto(f"/threads/{keep}/")
    sidebar = page.locator("#thread-sidebar")
    if width < 1200:  # narrow screens: no sidebar; the list's scopes lead to the archive and the bin
        expect(sidebar).to_be_hidden()
        page.goto("/")
        expect(page.locator("#scope-bin")).to_have_text(words["bin_title"])
        return _delete_restore_on_a_phone(page, words, gone, width, tag)

    expect(sidebar.locator(".sidebar-group", has_text=words["today"])).to_have_count(1)
    expect(sidebar.locator(".sidebar-item.pinned", has_text=f"Pin me {tag}")).to_have_count(0)
    _menu(page, f"Pin me {tag}").get_by_role("button", name=words["pin"], exact=True).click()
    expect(sidebar.locator(".sidebar-group").first).to_have_text(words["pinned"])
    expect(sidebar.locator("ol").first).to_contain_text(f"Pin me {tag}")  # the Pinned group's list
    expect(sidebar.locator(".sidebar-item.pinned", has_text=f"Pin me {tag}")).to_have_count(1)
    expect(page).to_have_url(re.compile(f"/threads/{keep}/$"))  # back where the menu was used

    item = _menu(page, f"Keep {tag}")
    item.locator("input[name=title]").fill(f"Kept and renamed {tag}")
    expect(item.locator(".sidebar-actions")).to_be_in_viewport()
    _shot(page, f"sidebar-open-menu-{tag}")
    item.get_by_role("button", name=words["rename"]).click()
    expect(sidebar.locator("a[aria-current=page] .sidebar-title")).to_have_text(f"Kept and renamed {tag}")

    _menu(page, f"Box me {tag}").get_by_role("button", name=words["archive"], exact=True).click()
    expect(sidebar.locator(".sidebar-title", has_text=f"Box me {tag}")).to_have_count(0)
    _shot(page, f"sidebar-menu-{tag}")

    _menu(page, f"Bin me {tag}").get_by_role("button", name=words["delete"]).click()
    expect(page.locator(".flash")).to_contain_text(words["deleted"])
    page.goto(f"/threads/{keep}/")
    expect(sidebar.locator(".sidebar-title", has_text=f"Bin me {tag}")).to_have_count(0)

    # Typing filters the sidebar's own titles at once; Enter searches titles and messages on the list.
    sidebar.locator("#sidebar-search").fill(f"Pin me {tag}")
    expect(sidebar.locator(".sidebar-item:visible")).to_have_count(1)
    expect(sidebar.locator(".sidebar-item:visible")).to_contain_text(f"Pin me {tag}")
    expect(sidebar.locator(".sidebar-group:visible")).to_have_text([words["pinned"]])
    sidebar.locator("#sidebar-search").press("Enter")
    rows = page.locator("table.threads tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(f"Pin me {tag}")

    page.goto("/bin/")
    entry = page.locator("#bin-list li", has_text=f"Bin me {tag}")
    assert_no_sideways_scroll(page, width)
    _shot(page, f"bin-{tag}")
    entry.get_by_role("button", name=words["restore"]).click()
    expect(page).to_have_url(re.compile(f"/threads/{gone}/$"))
    expect(sidebar.locator(".sidebar-title", has_text=f"Bin me {tag}")).to_have_count(1)
    assert_no_sideways_scroll(page, width)


def _delete_restore_on_a_phone(page, words, thread_id: str, width: int, tag: str) -> None:
    page.goto(f"/threads/{thread_id}/delete")
    page.locator("form.confirm-actions button[type=submit]").click()
    expect(page.locator(".flash")).to_contain_text(words["deleted"])
    page.goto(f"/threads/{thread_id}/")  # a thread in the bin: a friendly 404 that offers it back
    expect(page.locator("h1")).to_have_text(words["missing"])
    expect(page.locator("#thread-in-bin")).to_contain_text(f"Bin me {tag}")
    assert_no_sideways_scroll(page, width)
    _shot(page, f"thread-in-bin-{tag}")
    page.get_by_role("button", name=words["restore"]).click()
    expect(page).to_have_url(re.compile(f"/threads/{thread_id}/$"))
    expect(page.locator("#composer-input")).to_be_visible()


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_a_reader_sees_the_thread_they_read_not_no_threads_yet(open_page, e2e_server, lang, width):
    words = WORDS[lang]
    thread_id = e2e_server.seed("thread", title=f"Alice's notes {lang} {width}")["thread_id"]
    page = _page(open_page, e2e_server, lang, width, staff=True)  # root may read every thread
    page.goto(f"/threads/{thread_id}/")
    sidebar = page.locator("#thread-sidebar")
    expect(page.get_by_text(words["no_threads"])).to_have_count(0)
    if width < 1200:  # no sidebar on narrow screens: the title heads the page
        expect(sidebar).to_be_hidden()
        expect(page.locator("h1")).to_contain_text(f"Alice's notes {lang} {width}")
        assert_no_sideways_scroll(page, width)
        return
    expect(sidebar.locator(".sidebar-reading a[aria-current=page]")).to_contain_text(
        f"Alice's notes {lang} {width}"
    )
    expect(sidebar.locator(".sidebar-group").first).to_have_text(words["reading"])
    expect(sidebar).not_to_contain_text(words["no_threads"])
    expect(sidebar.locator(".sidebar-reading .sidebar-menu")).to_have_count(0)
    _shot(page, f"sidebar-reader-{lang}-{width}")
