"""The thread's agent switch and "Regenerate with this agent" (issue 39 item 6) in Chromium at 1366 and
390 px, in English and 简体中文: the owner switches the agent from the thread's header, the page says
which agent the thread now uses with its window, the meter's trigger follows that window at once, and
the last reply is regenerated with another agent."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import (
    assert_no_sideways_scroll,
    restore_language,
    send_and_wait,
    settled_box,
    thread_in,
)

pytestmark = [pytest.mark.browser, pytest.mark.layout]

SWITCH = {"en": "Switch agent", "zh-hans": "切换智能体"}
NOW_COMPACT = {
    "en": "Now using Compact — window 8K tokens, compression at 7.2K tokens.",
    "zh-hans": "现在使用 Compact —— 上下文窗口 8K token，达到 7.2K token 时压缩。",
}
NOW_ASSISTANT = {"en": "Now using Assistant", "zh-hans": "现在使用 Assistant"}
REGENERATE_WITH = {"en": "Regenerate with this agent", "zh-hans": "用此智能体重新生成"}


@pytest.fixture
def compact_agent(e2e_server):
    """A second enabled agent with an 8,000-token window (trigger 7,200), disabled again afterwards so
    other tests see the agents they expect."""
    e2e_server.seed(
        "agent", slug="compact", fields={"name": "Compact", "context_window": 8000, "is_enabled": True}
    )
    yield
    e2e_server.seed("agent", slug="compact", fields={"name": "Compact", "is_enabled": False})


@pytest.mark.parametrize("width", [1366, 390])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_switch_the_agent_and_regenerate_with_another(open_page, e2e_server, compact_agent, width, language):
    thread_id = e2e_server.seed("thread", title="Switch me")["thread_id"]
    page, errors = thread_in(open_page, thread_id, width=width, language=language)
    send_and_wait(page, "Which trains go to Lyon?")

    switch = page.locator("#agent-switch")
    switch.locator("summary").click()
    expect(switch.locator("summary")).to_have_text(SWITCH[language])
    page.select_option("#agent-switch-select", "compact")
    switch.locator("button[type=submit]").click()

    expect(page.locator(".flash")).to_contain_text(NOW_COMPACT[language])
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    # The state panel (a drawer on a phone) says it too, and its meter's trigger is the new agent's.
    expect(page.locator("#agent-budget")).to_have_text(NOW_COMPACT[language])
    expect(page.locator("#state-panel")).to_have_attribute("data-trigger", "7200")
    assert_no_sideways_scroll(page, width)
    page.screenshot(path=f"/tmp/i39d-switch-{language}-{width}.png", full_page=True)

    other = page.locator("#transcript .message.role-assistant .regenerate-with")
    expect(other).to_have_count(1)
    expect(other.locator(".regenerate-with-go")).to_have_text(REGENERATE_WITH[language])
    other.locator("select").select_option("assistant")
    box = settled_box(other.locator(".regenerate-with-go"))
    assert box and box["height"] >= 24 and box["width"] >= 24
    page.screenshot(path=f"/tmp/i39d-regenerate-with-{language}-{width}.png")
    other.locator(".regenerate-with-go").click()

    expect(page.locator("#agent-budget")).to_contain_text(NOW_ASSISTANT[language], timeout=20_000)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded", timeout=20_000)
    expect(page.locator("#transcript .message.role-assistant")).to_have_count(1)
    expect(page.locator("#transcript .message.role-assistant .versions")).to_have_count(1)  # ‹ 2/2 ›
    assert errors == []
    restore_language(page, language)
