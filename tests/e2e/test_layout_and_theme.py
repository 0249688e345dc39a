"""Narrow screens, dark mode contrast, admin lists at 1366 px, and the README screenshots, in Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import in_viewport, open_context, open_thread, overflow, thread, usage

pytestmark = [pytest.mark.browser, pytest.mark.layout]


WIDE_CONTENT = [
    ("user", "https://example.com/" + "a-very-long-path-segment-" * 12),
    ("assistant", "```\n" + "x = 'a line of code that is much wider than a phone screen' " * 4 + "\n```\n\n"
     "| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n| " + " | ".join(["wide cell content"] * 6) + " |"),
]  # fmt: skip


CONTRAST = """(selector) => {
  const parse = (c) => c.match(/[\\d.]+/g).slice(0, 4).map(Number);
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const el = document.querySelector(selector);
  let bg = null;
  for (let node = el; node; node = node.parentElement) {
    const c = parse(getComputedStyle(node).backgroundColor);
    if (c.length < 4 || c[3] > 0.5) { bg = c; break; }
  }
  bg = bg || [255, 255, 255];
  const fg = parse(getComputedStyle(el).color);
  const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return { ratio: (a + 0.05) / (b + 0.05), background: bg };
}"""


ADMIN_LISTS = [
    "/admin/agent_platform/agent/",
    "/admin/agent_platform/apitoken/",
    "/admin/agent_platform/knowledgebase/",
    "/admin/agent_platform/document/",
    "/admin/agent_platform/chunk/",
    "/admin/conversations/conversation/",
    "/admin/conversations/agentrun/",
    "/admin/compression/compressionrecord/",
    "/admin/compression/compressionjob/",
    "/admin/pressure/",
]


DEMO_REPLY = """Here is a plan for **three days in Lisbon** by train:

1. Day one: Alfama and the castle, then *fado* in the evening.
2. Day two: the train to **Sintra** (40 minutes from Rossio).
3. Day three: Belém, the tower and the pastries.

To check the trains from the command line:

```python
import datetime

def next_trains(station: str, after: datetime.time) -> list[str]:
    \"\"\"Departures from ``station`` after ``after``.\"\"\"
    return [t for t in TIMETABLE[station] if t > after]
```

Budget so far: `642 €` of `900 €`."""


def test_nothing_overflows_horizontally_at_390_px(open_page, e2e_server):
    page = open_page(width=390, height=844)
    thread(e2e_server, "A thread with quite a long title to see how it wraps on a phone")
    page.goto("/")
    assert overflow(page) == 0
    thread_id = thread(e2e_server, "Phone", WIDE_CONTENT)
    e2e_server.seed("usage", thread_id=thread_id, usage=usage(0.9))
    open_thread(page, thread_id)
    assert overflow(page) == 0
    assert in_viewport(page, "#composer")
    expect(page.locator("#state-panel")).to_be_hidden()  # a drawer, opened from the header's meter
    open_context(page)
    expect(page.locator("#state-panel")).to_be_visible()
    assert overflow(page) == 0


def test_dark_mode_has_readable_contrast_on_the_chat_and_the_admin_chart(open_page, e2e_server):
    page = open_page(dark=True)
    thread_id = thread(e2e_server, "Dark", [("user", "Hello"), ("assistant", "Some `code` and **bold**.")])
    e2e_server.seed("usage", thread_id=thread_id, usage=usage(0.9))
    open_thread(page, thread_id)
    body = page.evaluate(CONTRAST, "body")
    assert sum(body["background"][:3]) < 150, "the page is not dark"
    for selector in (
        "body",
        "#transcript .message.role-user .message-body",
        "#transcript .message.role-assistant .message-body",
        ".message-meta",
        "#state-panel h2",
        "#composer-input",
        "#compression-hint p",
        "#compress-button",
    ):
        ratio = page.evaluate(CONTRAST, selector)["ratio"]
        assert ratio >= 4.5, f"{selector}: contrast {ratio:.2f}"

    staff = open_page(dark=True, staff=True)
    staff.goto("/admin/pressure/")
    heading = staff.locator(".pressure-chart h3")
    if heading.count():
        assert staff.evaluate(CONTRAST, ".pressure-chart h3")["ratio"] >= 4.5


def test_admin_lists_fit_a_1366_px_screen(open_page, e2e_server):
    title = "A thread seen by the admin, with a title long enough to need two lines in a list " * 2
    thread_id = thread(e2e_server, title, [("user", "hi"), ("assistant", "hello")])
    e2e_server.seed("usage", thread_id=thread_id, usage=usage(0.9))
    page = open_page(staff=True)
    wide = {}
    for url in ADMIN_LISTS:
        response = page.goto(url)
        if response.status == 404:
            continue
        assert response.ok, url
        cut = page.evaluate(
            """() => { const t = document.querySelector('#result_list');
                 return t ? t.scrollWidth - t.parentElement.clientWidth : 0; }"""
        )
        if overflow(page) > 0 or cut > 0:
            wide[url] = (overflow(page), cut)
    assert wide == {}


def test_readme_screenshots_desktop_mobile_dark_and_chinese(open_page, e2e_server, screenshot):
    thread_id = thread(
        e2e_server,
        "Weekend in Lisbon",
        [
            ("user", "We are planning a trip to Lisbon. I prefer trains to planes; budget is 900 euros."),
            ("assistant", DEMO_REPLY),
            ("user", "Add a day trip to Cascais and keep it under budget."),
            (
                "assistant",
                "Cascais is 40 minutes from Cais do Sodré: `2.30 €` each way. New total: **646.60 €**.",
            ),
        ],
    )
    e2e_server.seed("usage", thread_id=thread_id, usage=usage(0.87))
    for name, options in (
        ("desktop", {}),
        ("mobile", {"width": 390, "height": 844}),
        ("dark", {"dark": True}),
    ):
        page = open_page(**options)
        open_thread(page, thread_id)
        assert overflow(page) == 0
        screenshot(page, name)
    page = open_page()
    open_thread(page, thread_id)
    page.click("button[name=language][value=zh-hans]")
    expect(page.locator("#composer button[type=submit]")).to_have_text("发送")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    screenshot(page, "zh-hans")
    page.click("button[name=language][value=en]")
    expect(page.locator("html")).to_have_attribute("lang", "en")
