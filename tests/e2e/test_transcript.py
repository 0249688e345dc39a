"""The transcript in Chromium: Markdown and code (and hostile markup kept inert), opening at the latest
message, following new content, long messages collapsed."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import in_viewport, open_thread, settled_box, thread

pytestmark = pytest.mark.browser


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


def _long_thread(server, title: str, exchanges: int = 30) -> str:
    messages = []
    for index in range(exchanges):
        messages += [
            ("user", f"Question {index}"),
            ("assistant", f"Answer {index}\n\n" + "A line of text. " * 30),
        ]
    return thread(server, title, messages)


def test_markdown_renders_code_is_highlighted_and_hostile_markup_stays_inert(page, e2e_server):
    open_thread(page, thread(e2e_server, "Markdown", [("user", "show me"), ("assistant", HOSTILE)]))
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


def test_a_long_thread_opens_at_its_latest_message_with_the_composer_in_view(page, e2e_server):
    thread_id = _long_thread(e2e_server, "Long thread")
    open_thread(page, thread_id)
    assert page.evaluate("window.scrollY") > 1000
    assert in_viewport(page, "#composer")
    last = page.locator("#transcript .message").last
    expect(last).to_contain_text("Answer 29")
    assert settled_box(last)["y"] < page.viewport_size["height"]

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
    assert in_viewport(page, "#composer")


def test_a_very_long_user_message_is_collapsed_with_expand(page, e2e_server):
    huge = "word " * 19_000  # 95K characters
    open_thread(page, thread(e2e_server, "Huge", [("user", huge), ("assistant", "Noted.")]))
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 2500, height
    details = page.locator("#transcript .message.role-user details.long-message")
    expect(details.locator("summary")).to_contain_text("95000 characters")
    details.locator("summary").click()
    assert page.evaluate("document.documentElement.scrollHeight") > height
