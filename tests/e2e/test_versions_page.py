"""Edit and regenerate in Chromium (issue 26 item 9): the owner edits a sent message and regenerates
the last reply; the earlier versions stay browsable in place (‹ 1/2 ›); a viewer sees them read-only."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import open_thread, overflow, send, thread_in

pytestmark = pytest.mark.browser

WORDS = {
    "en": {
        "edit": "Edit",
        "regenerate": "Regenerate",
        "send": "Send edited message",
        "earlier": "an earlier version",
    },
    "zh-hans": {
        "edit": "编辑",
        "regenerate": "重新生成",
        "send": "发送修改后的消息",
        "earlier": "较早的版本",
    },
}


def _settled(page, replies: int) -> None:
    """``replies`` assistant rows on the page and the last run ended."""
    expect(page.locator("#transcript li.message.role-assistant:not(.version-hidden)")).to_have_count(
        replies, timeout=20_000
    )
    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", re.compile("succeeded"), timeout=20_000
    )


@pytest.mark.parametrize(
    ("width", "language"), [(1366, "en"), (390, "en"), (1366, "zh-hans"), (390, "zh-hans")]
)
def test_edit_and_regenerate_keep_earlier_versions_browsable(
    open_page, e2e_server, width, language, screenshot
):
    thread_id = e2e_server.seed("thread", title="Trip planning")["thread_id"]
    page, errors = thread_in(open_page, thread_id, width=width, language=language)
    words = WORDS[language]
    send(page, "We are planning a trip to Lisbon.")
    _settled(page, 1)
    send(page, "Which museums should we see?")
    _settled(page, 2)

    _edit_the_second_message(page, words)
    _the_edited_message_keeps_its_first_version(page, words, screenshot, f"versions-edit-{language}-{width}")
    _regenerate_the_last_reply(page, words, screenshot, f"versions-regenerate-{language}-{width}")
    assert overflow(page) <= 0, f"the page scrolls sideways at {width}px"
    assert errors == []

    _a_viewer_sees_the_versions_not_the_controls(open_page, thread_id, width)
    if language != "en":
        page.click("button[name=language][value=en]")


def _edit_the_second_message(page, words: dict[str, str]) -> None:
    """Edit the second message: the page reloads on the fork, the answer comes to the new version."""
    second = page.locator("#transcript li.message.role-user").nth(1)
    second.get_by_role("button", name=words["edit"], exact=True).click()
    box = second.locator("form.edit-message textarea")
    expect(box).to_be_focused()
    box.fill("Which beaches should we see?")
    with page.expect_navigation(), page.expect_response(lambda r: r.url.endswith("/edit")) as answered:
        second.get_by_role("button", name=words["send"]).click()
    assert answered.value.status == 202
    _settled(page, 2)
    page.reload()
    _settled(page, 2)


def _the_edited_message_keeps_its_first_version(page, words: dict[str, str], screenshot, name: str) -> None:
    """The edited message shows 2/2; its first version is browsable in place (‹ 1/2 ›), then back."""
    edited = page.locator("#transcript li.message.role-user").nth(1)
    expect(edited.locator(".version-label")).to_have_text("2/2")
    expect(page.locator("#transcript .message-body:visible", has_text="Which museums")).to_have_count(0)
    edited.locator(".version-prev").click()
    expect(edited.locator(".version-label")).to_have_text("1/2")
    pane = edited.locator(".version-pane[data-version='1']")
    expect(pane).to_be_visible()
    expect(pane).to_contain_text("Which museums should we see?")
    expect(pane).to_contain_text(words["earlier"])
    expect(
        page.locator("#transcript li.message.role-assistant").last
    ).to_be_hidden()  # the current reply steps aside
    screenshot(page, name)
    edited.locator(".version-next").click()
    expect(pane).to_be_hidden()
    expect(edited.locator(".message-body").first).to_contain_text("Which beaches should we see?")


def _regenerate_the_last_reply(page, words: dict[str, str], screenshot, name: str) -> None:
    """Regenerate the last reply (only the last reply offers it): its first version stays browsable."""
    regenerate = page.get_by_role("button", name=words["regenerate"], exact=True)
    expect(regenerate).to_have_count(1)
    with page.expect_navigation(), page.expect_response(lambda r: r.url.endswith("/regenerate")) as answered:
        regenerate.click()  # the page reloads on the fork
    assert answered.value.status == 202
    _settled(page, 2)
    page.reload()
    _settled(page, 2)
    reply = page.locator("#transcript li.message.role-assistant").last
    expect(reply.locator(".version-label")).to_have_text("2/2")
    reply.locator(".version-prev").click()
    expect(reply.locator(".version-pane[data-version='1']")).to_be_visible()
    screenshot(page, name)


def _a_viewer_sees_the_versions_not_the_controls(open_page, thread_id: str, width: int) -> None:
    """A viewer (staff) sees the versions, not the controls."""
    viewer = open_page(staff=True, width=width, height=844 if width < 500 else 900)
    open_thread(viewer, thread_id)
    expect(viewer.locator(".edit-open, .regenerate, form.edit-message")).to_have_count(0)
    viewed = viewer.locator("#transcript li.message.role-user").nth(1)
    expect(viewed.locator(".version-label")).to_have_text("2/2")
    viewed.locator(".version-prev").click()
    expect(viewed.locator(".version-pane[data-version='1']")).to_contain_text("Which museums should we see?")
