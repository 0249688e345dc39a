"""What a chat user takes for granted, in headless Chromium: Stop, Markdown, order and scroll, reloads
mid-reply, long messages, the connection banner, threads, narrow screens, dark mode, the keyboard."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

LONG_REPLY = "Tell me everything about trains, " * 6  # the offline model echoes it back, word by word


@pytest.fixture
def slow_model(e2e_server):
    e2e_server.seed("slow_model", delay=0.15)
    yield
    e2e_server.seed("fast_model")


@pytest.fixture
def open_page(browser, e2e_server):
    """``open_page(width=..., dark=..., staff=...)``: a logged-in page in a fresh context."""
    contexts = []

    def make(*, width: int = 1366, height: int = 900, dark: bool = False, staff: bool = False):
        context = browser.new_context(
            base_url=e2e_server.base_url,
            viewport={"width": width, "height": height},
            color_scheme="dark" if dark else "light",
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15000)
        page.goto("/accounts/login/")
        page.fill("input[name=username]", "root" if staff else "alice")
        page.fill("input[name=password]", "pw-root-123" if staff else "pw-alice-123")
        page.click("main button[type=submit]")
        page.wait_for_url(re.compile(r"/$"))
        return page

    yield make
    for context in contexts:
        context.close()


def _thread(server, title: str, messages: list[tuple[str, str]] | None = None) -> str:
    thread_id = server.seed("thread", title=title)["thread_id"]
    if messages:
        server.seed("messages", thread_id=thread_id, messages=messages)
    return thread_id


def _open(page, thread_id: str) -> None:
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")


def _send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")


def _in_viewport(page, selector: str) -> bool:
    return page.evaluate(
        """(selector) => { const r = document.querySelector(selector).getBoundingClientRect();
           return r.top >= 0 && r.bottom <= window.innerHeight + 1; }""",
        selector,
    )


# --- 1. Stop -------------------------------------------------------------------------------------


def test_stop_ends_the_run_and_keeps_what_was_streamed_marked_as_stopped(page, e2e_server, slow_model):
    _open(page, _thread(e2e_server, "Stop me"))
    _send(page, LONG_REPLY)
    expect(page.locator("#stream-body")).to_contain_text("Offline model", timeout=20000)
    page.click("#stop-button")

    stopped = page.locator("#transcript .message.role-assistant.interrupted")
    expect(stopped).to_have_count(1)
    expect(stopped.locator(".badge-interrupted")).to_be_visible()
    # The question was sent (the reply began): it is not marked "not sent".
    expect(page.locator("#transcript .message.role-user .badge-cancelled")).to_be_hidden()
    expect(page.locator("#run-status")).to_have_attribute("data-status", "cancelled")
    expect(page.locator("#stream")).to_be_hidden()
    kept = stopped.locator(".message-body").inner_text()
    assert "Offline model" in kept
    assert kept.count("trains") < 6, "the reply went on after Stop"

    # The thread goes on: the next message is answered normally.
    e2e_server.seed("fast_model")
    _send(page, "Are you still there?")
    expect(page.locator("#transcript .message.role-assistant").last).to_contain_text("Are you still there?")


def test_a_message_sent_during_a_run_shows_queued_after_that_runs_reply(page, e2e_server, slow_model):
    _open(page, _thread(e2e_server, "Queue"))
    _send(page, "first question")
    expect(page.locator("#stream-body")).to_contain_text("Offline", timeout=20000)
    _send(page, "second question")
    queued = page.locator("#transcript .message.role-user", has_text="second question")
    expect(queued.locator(".badge-queued")).to_be_visible()
    # Shown after the reply being streamed, not in the middle of it.
    order = page.evaluate(
        """() => Array.from(document.querySelectorAll('#transcript > li:not([hidden])')).map(
             (li) => li.id === 'stream' ? 'stream' : li.querySelector('.message-body')?.innerText || '')"""
    )
    assert order.index("stream") < next(i for i, text in enumerate(order) if "second question" in text)

    expect(queued.locator(".badge-queued")).to_be_hidden(timeout=30000)  # its run started
    expect(page.locator("#transcript .message.role-assistant")).to_have_count(2, timeout=30000)
    texts = page.locator("#transcript .message .message-body").all_inner_texts()
    first_reply = next(i for i, t in enumerate(texts) if "first question" in t and "Offline" in t)
    second_user = texts.index("second question")
    second_reply = next(i for i, t in enumerate(texts) if "second question" in t and "Offline" in t)
    assert texts.index("first question") < first_reply < second_user < second_reply


def test_removing_a_queued_message_from_the_queue(page, e2e_server, slow_model):
    _open(page, _thread(e2e_server, "Dequeue"))
    _send(page, "keep this one")
    expect(page.locator("#stream-body")).to_contain_text("Offline", timeout=20000)
    _send(page, "drop this one")
    dropped = page.locator("#transcript .message.role-user", has_text="drop this one")
    dropped.get_by_role("button", name="Remove from queue").click()
    expect(dropped.locator(".badge-cancelled")).to_be_visible()
    expect(page.locator("#transcript .message.role-assistant")).to_have_count(1, timeout=30000)
    expect(page.locator("#stream")).to_be_hidden()
    page.reload()
    expect(page.locator("#transcript .message.role-assistant")).to_have_count(1)
    expect(dropped.locator(".badge-cancelled")).to_be_visible()


# --- 2. Markdown and code ----------------------------------------------------------------------

HOSTILE = """# Plan

Some **bold** text and a [safe link](https://example.com/docs).

<script>window.__pwned = 1</script>
<img src=x onerror="window.__pwned = 2">
[click me](javascript:window.__pwned=3)

```python
def greet(name):
    return f"hello {name}"
```
"""


def test_markdown_renders_code_is_highlighted_and_hostile_markup_stays_inert(page, e2e_server):
    _open(page, _thread(e2e_server, "Markdown", [("user", "show me"), ("assistant", HOSTILE)]))
    reply = page.locator("#transcript .message.role-assistant .message-body")
    expect(reply.locator("h1")).to_have_text("Plan")
    expect(reply.locator("strong")).to_have_text("bold")
    expect(reply.locator("a", has_text="safe link")).to_have_attribute("href", "https://example.com/docs")
    expect(reply.locator("pre.code .tok-k").first).to_have_text("def")
    expect(reply.locator("pre .copy-code")).to_have_count(1)
    expect(page.locator("#transcript script")).to_have_count(0)
    expect(page.locator("#transcript [onerror]")).to_have_count(0)
    expect(page.locator("#transcript img")).to_have_count(0)
    assert page.locator('#transcript a[href^="javascript:"]').count() == 0
    page.locator("#transcript a", has_text="click me").count()  # shown as text at most
    assert page.evaluate("window.__pwned") is None
    # The raw markup is shown as text.
    expect(reply).to_contain_text("<script>window.__pwned = 1</script>")

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    reply.locator("pre .copy-code").click()
    expect(reply.locator("pre .copy-code")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()").startswith("def greet(name):")


def test_a_streamed_reply_is_plain_text_then_replaced_by_the_rendered_message(page, e2e_server, slow_model):
    _open(page, _thread(e2e_server, "Stream then render"))
    _send(page, "**bold** please")
    expect(page.locator("#stream-body")).to_contain_text("**bold**", timeout=30000)  # plain while streaming
    reply = page.locator("#transcript .message.role-assistant").last
    expect(reply.locator(".message-body strong")).to_have_text("bold", timeout=30000)
    expect(page.locator("#stream")).to_be_hidden()


# --- 3. Order and scroll -----------------------------------------------------------------------


def _long_thread(server, title: str, exchanges: int = 30) -> str:
    messages = []
    for index in range(exchanges):
        messages += [
            ("user", f"Question {index}"),
            ("assistant", f"Answer {index}\n\n" + "A line of text. " * 30),
        ]
    return _thread(server, title, messages)


def test_a_long_thread_opens_at_its_latest_message_with_the_composer_in_view(page, e2e_server):
    thread_id = _long_thread(e2e_server, "Long thread")
    _open(page, thread_id)
    assert page.evaluate("window.scrollY") > 1000
    assert _in_viewport(page, "#composer")
    last = page.locator("#transcript .message").last
    expect(last).to_contain_text("Answer 29")
    assert last.bounding_box()["y"] < page.viewport_size["height"]

    # New content while reading older messages: no jump, a "jump to latest" control instead.
    page.evaluate("window.scrollTo(0, 0)")
    e2e_server.seed("messages", thread_id=thread_id, messages=[["user", "one more"]])
    e2e_server.seed(
        "event", thread_id=thread_id, type="message.created", payload={"message": {"role": "user"}}
    )
    expect(page.locator("#jump-latest")).to_be_visible()
    assert page.evaluate("window.scrollY") < 50
    page.click("#jump-latest")
    expect(page.locator("#jump-latest")).to_be_hidden()
    assert _in_viewport(page, "#composer")


# --- 4. Reloads lose nothing -------------------------------------------------------------------


def test_a_reload_during_a_reply_shows_the_text_streamed_so_far_and_continues(page, e2e_server, slow_model):
    thread_id = _thread(e2e_server, "Reload")
    _open(page, thread_id)
    _send(page, LONG_REPLY)
    expect(page.locator("#stream-body")).to_contain_text("You said", timeout=20000)
    page.reload()
    # Rendered by the server: there before any new token arrives.
    assert "Offline model" in page.locator("#stream-body").inner_text()
    expect(page.locator("#stream")).to_be_visible()
    reply = page.locator("#transcript .message.role-assistant").last
    expect(reply).to_contain_text("Tell me everything about trains", timeout=30000)
    expect(page.locator("#stream")).to_be_hidden()
    assert reply.locator(".message-body").inner_text().count("trains") == 6


# --- 5. Long content ---------------------------------------------------------------------------


def test_a_very_long_user_message_is_collapsed_with_expand(page, e2e_server):
    huge = "word " * 19_000  # 95K characters
    _open(page, _thread(e2e_server, "Huge", [("user", huge), ("assistant", "Noted.")]))
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 2500, height
    details = page.locator("#transcript .message.role-user details.long-message")
    expect(details.locator("summary")).to_contain_text("95000 characters")
    details.locator("summary").click()
    assert page.evaluate("document.documentElement.scrollHeight") > height


# --- 6. Connection and errors ------------------------------------------------------------------

TRACK_SOCKETS = """
window.__sockets = [];
const NativeWebSocket = window.WebSocket;
window.WebSocket = function (...args) { const s = new NativeWebSocket(...args); window.__sockets.push(s); return s; };
window.WebSocket.prototype = NativeWebSocket.prototype;
"""


def test_a_banner_says_when_live_updates_drop_and_when_they_return(page, e2e_server):
    page.add_init_script(TRACK_SOCKETS)
    _open(page, _thread(e2e_server, "Banner"))
    banner = page.locator("#connection-banner")
    expect(banner).to_be_hidden()
    shown = page.evaluate(
        """() => { window.__sockets.at(-1).close();
             return new Promise((resolve) => setTimeout(() => resolve(
               document.getElementById('connection-banner').textContent), 50)); }"""
    )
    assert "disconnected" in shown
    expect(page.locator("#socket-status")).to_contain_text(re.compile("Offline|Connecting|Live"))
    expect(banner).to_contain_text("back")
    expect(page.locator("#socket-status")).to_contain_text("Live")
    expect(banner).to_be_hidden(timeout=10000)  # the notice clears once the condition has ended


def test_a_send_that_cannot_reach_the_server_says_not_sent_and_keeps_the_draft(page, e2e_server):
    _open(page, _thread(e2e_server, "Offline send"))
    page.route(re.compile(r".*/threads/.*/messages$"), lambda route: route.abort())
    _send(page, "please keep me")
    expect(page.locator("#composer-error")).to_contain_text("Not sent")
    expect(page.locator("#composer-input")).to_have_value("please keep me")
    expect(page.locator("#transcript .message.role-user")).to_have_count(0)
    page.unroute(re.compile(r".*/threads/.*/messages$"))
    page.click("#composer button[type=submit]")
    expect(page.locator("#transcript .message.role-user")).to_have_count(1)
    expect(page.locator("#composer-error")).to_have_text("")


# --- 7. Threads --------------------------------------------------------------------------------


def test_auto_title_rename_search_and_delete_with_confirmation(page, e2e_server):
    page.select_option("select[name=agent]", "assistant")
    page.click("text=New thread")
    page.wait_for_url(re.compile(r"/threads/[0-9a-f-]+/$"))
    _send(page, "Plan a weekend in Porto\nwith trains only")
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
    expect(page.locator("table.threads")).to_contain_text("No thread title contains that.")

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


# --- 8. Everywhere ------------------------------------------------------------------------------

WIDE_CONTENT = [
    ("user", "https://example.com/" + "a-very-long-path-segment-" * 12),
    ("assistant", "```\n" + "x = 'a line of code that is much wider than a phone screen' " * 4 + "\n```\n\n"
     "| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n| " + " | ".join(["wide cell content"] * 6) + " |"),
]  # fmt: skip


def _overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def test_nothing_overflows_horizontally_at_390_px(open_page, e2e_server):
    page = open_page(width=390, height=844)
    _thread(e2e_server, "A thread with quite a long title to see how it wraps on a phone")
    page.goto("/")
    assert _overflow(page) == 0
    thread_id = _thread(e2e_server, "Phone", WIDE_CONTENT)
    e2e_server.seed("usage", thread_id=thread_id, usage=_usage(0.9))
    _open(page, thread_id)
    assert _overflow(page) == 0
    assert _in_viewport(page, "#composer")
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    expect(page.locator("#state-panel")).to_be_visible()
    assert _overflow(page) == 0


def _usage(ratio: float) -> dict:
    from tests.conversations.page_support import usage_at

    return usage_at(ratio)


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


def test_dark_mode_has_readable_contrast_on_the_chat_and_the_admin_chart(open_page, e2e_server):
    page = open_page(dark=True)
    thread_id = _thread(e2e_server, "Dark", [("user", "Hello"), ("assistant", "Some `code` and **bold**.")])
    e2e_server.seed("usage", thread_id=thread_id, usage=_usage(0.9))
    _open(page, thread_id)
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


def test_keyboard_only_send_with_a_visible_focus(page, e2e_server):
    _open(page, _thread(e2e_server, "Keyboard"))
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "composer-input":
            break
    else:
        pytest.fail("Tab never reached the composer")
    focused = page.evaluate("getComputedStyle(document.getElementById('composer')).boxShadow")
    assert focused != "none"
    page.keyboard.type("Sent with the keyboard")
    page.keyboard.press("Enter")
    expect(page.locator("#transcript .message.role-user")).to_contain_text("Sent with the keyboard")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent.trim()") == "Send"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"


def test_the_favicon_is_served_on_every_page(page, e2e_server):
    response = page.request.get("/favicon.ico")
    assert response.ok and "svg" in response.headers["content-type"]
    assert page.locator("link[rel=icon]").count() == 1


ADMIN_LISTS = [
    "/admin/agent_platform/agent/",
    "/admin/agent_platform/apitoken/",
    "/admin/agent_platform/knowledgebase/",
    "/admin/agent_platform/document/",
    "/admin/agent_platform/chunk/",
    "/admin/conversations/conversation/",
    "/admin/conversations/agentrun/",
    "/admin/compression/compressionrecord/",
    "/admin/pressure/",
]


def test_admin_lists_fit_a_1366_px_screen(open_page, e2e_server):
    title = "A thread seen by the admin, with a title long enough to need two lines in a list " * 2
    thread_id = _thread(e2e_server, title, [("user", "hi"), ("assistant", "hello")])
    e2e_server.seed("usage", thread_id=thread_id, usage=_usage(0.9))
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
        if _overflow(page) > 0 or cut > 0:
            wide[url] = (_overflow(page), cut)
    assert wide == {}


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


def test_readme_screenshots_desktop_mobile_dark_and_chinese(open_page, e2e_server, screenshot):
    thread_id = _thread(
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
    e2e_server.seed("usage", thread_id=thread_id, usage=_usage(0.87))
    for name, options in (
        ("desktop", {}),
        ("mobile", {"width": 390, "height": 844}),
        ("dark", {"dark": True}),
    ):
        page = open_page(**options)
        _open(page, thread_id)
        assert _overflow(page) == 0
        screenshot(page, name)
    page = open_page()
    _open(page, thread_id)
    page.click("button[name=language][value=zh-hans]")
    expect(page.locator("#composer button[type=submit]")).to_have_text("发送")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    screenshot(page, "zh-hans")
    page.click("button[name=language][value=en]")
    expect(page.locator("html")).to_have_attribute("lang", "en")
