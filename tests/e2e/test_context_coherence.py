"""The context panel stays coherent in headless Chromium through a compaction, a threshold retune in
the admin (while the page is open, no reload), a manual summary, an undo and an automatic summary:
the meter, the hint, the card and the memory panel never contradict each other."""

from __future__ import annotations

import math
import re

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import (
    View,
    assert_no_sideways_scroll,
    compress_now,
    open_context,
    send_and_wait,
    thread_page,
)

pytestmark = pytest.mark.browser

AGENT = "coherence"
BIG_FILE = "notes/big.txt"


def _figures(page) -> dict:
    """What the panel says right now (the meter's figures, the hint, the card)."""
    return page.evaluate(
        """() => {
          const panel = document.getElementById("state-panel");
          const card = document.getElementById("compression-status");
          const hint = document.getElementById("compression-hint");
          return {
            tokens: Number(panel.dataset.tokens || 0),
            trigger: Number(panel.dataset.trigger || 0),
            ratio: Number(panel.dataset.ratio || 0),
            hint: panel.dataset.hint,
            hintText: hint ? hint.textContent : "",
            ratioText: (document.getElementById("pressure-ratio") || {}).textContent || "",
            triggerText: (document.getElementById("pressure-trigger") || {}).textContent || "",
            card: card.dataset.status, outcome: card.dataset.outcome, kind: card.dataset.kind,
            after: Number(card.dataset.after || -1),
          };
        }"""
    )


def _assert_coherent(page) -> dict:
    """The meter's ratio is its tokens over its trigger, and the hint is the one that ratio calls for."""
    figures = _figures(page)
    if figures["trigger"]:
        assert figures["ratio"] == pytest.approx(figures["tokens"] / figures["trigger"], abs=1e-4)
        assert figures["ratioText"] == f"{figures['ratio'] * 100:.1f}%"
        expected = "auto" if figures["ratio"] >= 1 else "suggest" if figures["ratio"] >= 0.85 else ""
        assert figures["hint"] == expected, figures
        if expected == "auto":
            assert "compressed automatically" in figures["hintText"]
            assert "Compress it before the next run" not in figures["hintText"]
    return figures


def _retune(admin, agent_id: int, threshold_k: int) -> None:
    admin.goto(f"/admin/agent_platform/agent/{agent_id}/change/")
    admin.fill("input[name=summary_threshold]", str(threshold_k))
    admin.click("input[name=_continue]")
    expect(admin.locator(".messagelist")).to_be_visible()


@pytest.fixture
def admin(browser, e2e_server):
    credentials = e2e_server.seed("staff")
    context = browser.new_context(base_url=e2e_server.base_url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15000)
    page.goto("/admin/login/")
    page.fill("input[name=username]", credentials["username"])
    page.fill("input[name=password]", credentials["password"])
    page.click("input[type=submit]")
    yield page
    context.close()


def test_the_panel_stays_coherent_through_compaction_retunes_summary_undo(
    page, admin, e2e_server, screenshot
):
    agent_id = e2e_server.seed(
        "agent", slug=AGENT, fields={"summary_threshold": 100, "summary_keep_messages": 2}
    )["agent_id"]
    thread_id = e2e_server.seed("thread", agent=AGENT, title="Reading a long file")["thread_id"]
    lines = "\n".join(
        f"Line {n}: the quarterly report lists revenue, costs and notes for region {n}." for n in range(400)
    )
    e2e_server.seed("file", thread_id=thread_id, path=BIG_FILE, text=lines)
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")

    first = _a_big_tool_result_compresses_nothing_yet(page)
    k = _a_retune_in_the_admin_reaches_the_open_page(page, admin, agent_id, first)
    _a_lower_threshold_promises_automatic_compression(page, admin, agent_id, k)
    screenshot(page, "context-auto-hint")
    _the_next_request_compacts_by_itself(page)
    summarized = _manual_compression_from_the_hint(page, admin, agent_id)
    screenshot(page, "context-summarized")
    _undo_from_the_card(page, summarized)
    _an_automatic_summary_in_a_run(page, admin, agent_id)


def _a_big_tool_result_compresses_nothing_yet(page) -> dict:
    """1. A big tool result: far below the default trigger, no hint, nothing compressed yet."""
    send_and_wait(page, f"read {BIG_FILE}")
    expect(page.locator("#transcript .message.role-assistant").last).to_contain_text(f"I read {BIG_FILE}")
    first = _assert_coherent(page)
    assert first["tokens"] > 6000 and first["hint"] == ""
    expect(page.locator("#memory-panel")).to_contain_text("nothing is summarized")
    return first


def _a_retune_in_the_admin_reaches_the_open_page(page, admin, agent_id: int, first: dict) -> int:
    """2. A staff user retunes the threshold in the admin: the open page follows at once, no reload.
    Returns the threshold set, in thousands of tokens (the hint now suggests compressing)."""
    k = math.ceil(first["tokens"] / 1024) + (1 if first["tokens"] % 1024 == 0 else 0)
    _retune(admin, agent_id, k)
    expect(page.locator("#pressure-trigger")).to_have_text(re.compile(r"^" + re.escape(_k(k * 1024)) + r"$"))
    retuned = _assert_coherent(page)
    assert retuned["tokens"] == first["tokens"] and retuned["hint"] == "suggest"
    admin.goto("/admin/pressure/")
    expect(admin.locator("#pressure-threads")).to_contain_text(_k(k * 1024))
    return k


def _a_lower_threshold_promises_automatic_compression(page, admin, agent_id: int, k: int) -> None:
    """2, below the figure: the hint says the next request compresses automatically."""
    _retune(admin, agent_id, k - 2)
    expect(page.locator("#compression-hint")).to_contain_text("compressed automatically")
    assert _assert_coherent(page)["hint"] == "auto"


def _the_next_request_compacts_by_itself(page) -> None:
    """3. The next request compresses by itself: the big result is saved to a file (compaction)."""
    send_and_wait(page, "thanks, what else?")
    expect(page.locator("#compression-status")).to_have_attribute("data-status", "completed")
    compacted = _assert_coherent(page)
    assert compacted["outcome"] in ("compacted", "could_not_reach_budget"), compacted
    assert compacted["kind"] == "compression"
    # The result the model now sees as a receipt is marked in the transcript, one click from its file.
    marker = page.locator("#transcript .saved-marker").first
    expect(marker).to_contain_text("Saved for the model")
    expect(marker.locator("a.receipt-link")).to_have_attribute(
        "href", re.compile(r"/files/outputs/large_tool_results/")
    )
    expect(page.locator("#compression-status .saved-files a").first).to_be_visible()


def _manual_compression_from_the_hint(page, admin, agent_id: int) -> dict:
    """4. Manual compression from the hint (retune so it is offered): the card's "after" is the meter.
    Returns the panel's figures once the summary is applied."""
    figures = _figures(page)
    k = max(2, math.ceil(figures["tokens"] / 1024 / 0.9))
    while figures["tokens"] / (k * 1024) < 0.85:
        k -= 1
    _retune(admin, agent_id, k)
    expect(page.locator("#compress-button")).to_be_enabled()
    meter_before = _assert_coherent(page)["tokens"]
    page.click("#compress-button")
    # The preview starts from the meter's figure, and so does the card once it is applied.
    preview = page.locator("#compress-preview")
    expect(preview).to_be_visible()
    assert int(preview.get_attribute("data-before")) == meter_before
    page.click("#compress-apply")
    expect(page.locator("#compression-status")).to_have_attribute(
        "data-outcome", re.compile("summarized|could_not_reach_budget")
    )
    summarized = _assert_coherent(page)
    assert summarized["after"] == summarized["tokens"], summarized
    assert int(page.locator("#compression-status").get_attribute("data-before")) == meter_before
    expect(page.locator("#memory-panel")).to_have_attribute("data-summary", "true")
    expect(page.locator("#memory-panel")).to_contain_text("stands for")
    return summarized


def _undo_from_the_card(page, summarized: dict) -> None:
    """5. Undo from the card, after a confirmation that says what comes back."""
    dialogs = []
    page.once("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    page.click("#undo-button")
    expect(page.locator("#compression-status")).to_have_attribute("data-kind", "undo")
    assert int(page.locator("#compression-status").get_attribute("data-before")) == summarized["tokens"]
    expect(page.locator("#compression-status")).to_contain_text("Undone at")
    assert dialogs and "in full again" in dialogs[0]
    undone = _assert_coherent(page)
    assert undone["after"] == undone["tokens"], undone
    expect(page.locator("#memory-panel")).to_have_attribute("data-summary", "false")


def _an_automatic_summary_in_a_run(page, admin, agent_id: int) -> None:
    """6. An automatic summary in a run: the card says how it ended, the meter agrees with itself."""
    _retune(admin, agent_id, 2)
    send_and_wait(page, "and the summary of the report?")
    expect(page.locator("#compression-status")).to_have_attribute("data-status", "completed")
    final = _assert_coherent(page)
    assert final["outcome"] in ("summarized", "compacted", "could_not_reach_budget"), final
    if final["outcome"] == "could_not_reach_budget":
        expect(page.locator("#sent-above-trigger")).to_be_visible()
        expect(page.locator("#compression-status .card-reason")).to_contain_text("trigger")


def _k(tokens: int) -> str:
    from context_engine.tokens.messages import format_tokens

    return format_tokens(tokens)


@pytest.mark.parametrize(
    ("width", "height", "scheme"), [(1366, 900, "light"), (390, 844, "light"), (1366, 900, "dark")]
)
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_context_panel_reads_well_at_desktop_and_phone_widths(
    browser, e2e_server, width, height, scheme, language, screenshot
):
    """A summarized thread with a saved result, in both languages, at 1366 and 390 px: nothing spills
    sideways, every panel is there, and the files are links."""
    e2e_server.seed("agent", slug="screens", fields={"summary_threshold": 100, "summary_keep_messages": 2})
    thread_id = e2e_server.seed("thread", agent="screens", title="Quarterly report")["thread_id"]
    lines = "\n".join(f"Line {n}: revenue, costs and notes for region {n}." for n in range(300))
    e2e_server.seed("file", thread_id=thread_id, path=BIG_FILE, text=lines)
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language, scheme=scheme)
    ) as page:
        send_and_wait(page, f"read {BIG_FILE}")
        send_and_wait(page, "Please keep the answer short.")
        compress_now(page, thread_id)
        open_context(page)  # a drawer on a phone
        expect(page.locator("#compression-status")).to_have_attribute("data-status", "completed")
        assert_no_sideways_scroll(page, width)
        page.locator("#memory-summary summary").click()
        page.locator("aside.side").scroll_into_view_if_needed()
        if scheme == "dark":  # the card follows the theme: light text on a dark ground
            card = page.evaluate(
                """() => { const s = getComputedStyle(document.getElementById("compression-status"));
                           return [s.color, s.backgroundColor]; }"""
            )
            text, ground = (sum(map(int, re.findall(r"\d+", c)[:3])) for c in card)
            assert text > ground + 200, card
        name = f"context-panel-{'zh-hans' if language != 'en' else 'en'}-{width}"
        screenshot(page, name + ("-dark" if scheme == "dark" else ""))
