"""Issue 26, items 2, 4, 6 and 7 in Chromium at 1366 and 390 px, English and 简体中文: Stop during an
automatic summary ends it and the card says "stopped"; a summary that is applied shows where the
model's word-for-word view begins, numbered as the memory panel counts, the summary as Markdown, and
its undo; a failing summary model is told in words, and the hint stops promising; the history file
reads as a conversation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import assert_no_sideways_scroll, close_context, open_context, thread_in

pytestmark = pytest.mark.browser

AGENT = "controls"
OPENING = "Read my chapters, please. The prologue tells of the town before its harbour was built. " * 14
LONG = "Chapter one tells how the harbour was built, stone by stone, over many winters. " * 40
WORDS = {
    "en": {
        "stopped": "Compression stopped",
        "boundary": "The model sees from here word for word",
        "failures": "The summary model failed 2 times since",
        "kind": "(rate limit)",
        "history": "Summarized at",
    },
    "zh-hans": {
        "stopped": "压缩已停止",
        "boundary": "模型从这里开始逐字阅读",
        "failures": "起已失败 2 次",
        "kind": "（速率限制）",
        "history": "摘要于",
    },
}


def _wait_idle(page) -> None:
    page.wait_for_function(
        """() => { const p = document.getElementById('state-panel');
             return p && p.dataset.running === 'false' && p.dataset.queued === 'false'; }""",
        timeout=30000,
    )


def _send(page, text: str, replies: int) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")
    expect(page.locator("#transcript .message.role-assistant")).to_have_count(replies, timeout=30000)
    _wait_idle(page)


def _scroll_to(page, element_id: str) -> None:
    """By id at the moment of the call: the panels are swapped whole when the state refreshes."""
    page.evaluate("(id) => document.getElementById(id).scrollIntoView({block: 'center'})", element_id)


@dataclass(frozen=True)
class _Scene:
    """What the steps of one combination share: the page, the server, the thread, the width and language."""

    page: Any
    server: Any
    thread_id: str
    width: int
    language: str
    screenshot: Callable[[Any, str], None]

    @property
    def words(self) -> dict[str, str]:
        return WORDS[self.language]

    def shoot(self, page, name: str) -> None:
        self.screenshot(page, f"controls-{name}-{self.language}-{self.width}")


@pytest.mark.parametrize("width", [1366, 390])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_compression_controls_never_mislead(open_page, e2e_server, width, language, screenshot):
    e2e_server.seed(
        "agent", slug=AGENT, fields={"summary_threshold": 1, "summary_keep_messages": 2, "tools": []}
    )
    thread_id = e2e_server.seed("thread", title="Harbour chapters", agent=AGENT)["thread_id"]
    page, errors = thread_in(open_page, thread_id, width=width, language=language)
    # History worth folding (below T on its own): an automatic summary then has something to make smaller.
    # A two-line opening left nothing a summary could shrink, and the compression ended at once unapplied.
    _send(page, OPENING, replies=1)
    scene = _Scene(page, e2e_server, thread_id, width, language, screenshot)

    _stop_during_an_automatic_summary(scene)
    _an_applied_summary_shows_where_the_view_begins(scene)
    _a_failing_summary_model_is_told_in_words(scene)
    _the_history_file_reads_as_a_conversation(scene)
    assert errors == []


def _stop_during_an_automatic_summary(scene: _Scene) -> None:
    """2. Stop during an automatic summary: the card says stopped, in words; nothing is applied."""
    page = scene.page
    scene.server.seed("slow_summary", delay=60)
    try:
        page.fill("#composer-input", LONG)
        page.keyboard.press("Enter")
        expect(page.locator("#compression-status")).to_have_attribute("data-status", "started", timeout=30000)
        page.click("#stop-button")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "cancelled")
        card = page.locator("#compression-status")
        expect(card).to_have_attribute("data-status", "cancelled")
        expect(card).to_contain_text(scene.words["stopped"])
        assert "RunCancelled" not in page.locator("body").inner_text()
    finally:
        scene.server.seed("fast_model")
    expect(page.locator("#memory-panel")).to_have_attribute("data-summary", "false")
    assert_no_sideways_scroll(page, scene.width)
    _scroll_to(page, "compression-status")
    scene.shoot(page, "stopped")


def _an_applied_summary_shows_where_the_view_begins(scene: _Scene) -> None:
    """7 and 4. A summary that is applied: the marker, the numbers, the summary as Markdown, the undo."""
    page = scene.page
    _send(page, "Chapter two: the lighthouse. " * 30, replies=2)
    records = scene.server.seed("records", thread_id=scene.thread_id)["records"]
    assert any(r["level"] == "summary" and r["status"] == "completed" for r in records), records
    page.reload()
    marker = page.locator("#view-boundary")
    expect(marker).to_contain_text(scene.words["boundary"])
    first_kept = page.locator("#transcript .message", has=marker)
    seq = int(first_kept.get_attribute("data-seq"))
    expect(first_kept.locator(".seq-number")).to_have_text(f"#{seq}")
    expect(page.locator("#memory-panel")).to_contain_text(f"#1–#{seq - 1}")
    open_context(page)  # on a phone the panels are a drawer
    page.locator("#memory-summary > summary").click()
    expect(page.locator("#memory-summary .summary-text h2").first).to_be_visible()
    assert "<summary>" not in page.locator("#memory-summary").inner_text()
    expect(page.locator("#undo-button")).to_be_visible()
    assert_no_sideways_scroll(page, scene.width)
    close_context(page)
    _scroll_to(page, "view-boundary")
    scene.shoot(page, "boundary")


def _a_failing_summary_model_is_told_in_words(scene: _Scene) -> None:
    """6. A summary model that keeps failing: words, a time and a kind; the hint stops promising."""
    page = scene.page
    for _ in range(2):
        scene.server.seed(
            "record",
            thread_id=scene.thread_id,
            fields={"trigger": "auto", "level": "summary", "status": "failed", "reason": "rate_limit",
                    "error": "The summary call to the model failed."},
        )  # fmt: skip
    page.reload()
    open_context(page)
    card = page.locator("#compression-status")
    expect(card.locator("#summary-failures")).to_contain_text(scene.words["failures"])
    expect(card.locator("#summary-failures")).to_contain_text(scene.words["kind"])
    assert "Error" not in card.inner_text()
    expect(page.locator("#undo-button")).to_be_visible()  # 4: still offered, now beside the summary
    expect(page.locator("#memory-panel #undo-button")).to_have_count(1)
    if page.locator("#compression-hint").count():
        expect(page.locator("#compression-hint")).not_to_contain_text("compressed automatically")
    assert_no_sideways_scroll(page, scene.width)
    _scroll_to(page, "compression-status")
    scene.shoot(page, "failing")


def _the_history_file_reads_as_a_conversation(scene: _Scene) -> None:
    """7. The history file reads as a conversation, its raw forms one click away."""
    with scene.page.expect_popup() as popup:
        scene.page.locator("#memory-panel .history-link").click()
    history = popup.value
    expect(history.locator("#history-read")).to_contain_text(scene.words["history"])
    expect(history.locator("#history-read .history-message").first).to_be_visible()
    assert "<message" not in history.locator("#history-read").inner_text()
    expect(history.locator("#file-raw")).to_be_visible()
    assert_no_sideways_scroll(history, scene.width)
    scene.shoot(history, "history")
    history.locator("#file-lines").click()
    expect(history.locator("#file-text")).to_contain_text('<message type="human">')
