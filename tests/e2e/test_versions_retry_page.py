"""A resent edit or regenerate makes one version (issue 26 follow-up): the page names each attempt
with a request_id, so when the answer to the first request is lost and the person sends again, the
server returns the first result instead of a second version and run."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import View, overflow, send, thread_page

pytestmark = pytest.mark.browser

WORDS = {
    "en": {"edit": "Edit", "regenerate": "Regenerate", "send": "Send edited message"},
    "zh-hans": {"edit": "编辑", "regenerate": "重新生成", "send": "发送修改后的消息"},
}


def _settled(page, replies: int) -> None:
    expect(page.locator("#transcript li.message.role-assistant:not(.version-hidden)")).to_have_count(
        replies, timeout=20_000
    )
    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", re.compile("succeeded"), timeout=20_000
    )


def _quiet_switch(page) -> dict[str, bool]:
    """While ``quiet["on"]``, a newly opened live-updates socket reaches no server (connection trouble):
    the page stays as it was, so a retry is sent from the same form or button."""
    quiet = {"on": False}

    def handle(socket):
        if not quiet["on"]:
            socket.connect_to_server()

    page.route_web_socket(re.compile(r"/ws/threads/"), handle)
    return quiet


def _lose_first_answer(page, suffix: str, bodies: list[dict]) -> None:
    """The first request ending in ``suffix`` reaches the server, but its answer never reaches the page."""

    def handle(route):
        bodies.append(route.request.post_data_json or {})
        if len(bodies) == 1:
            route.fetch()  # the server does the work...
            route.abort("connectionreset")  # ...and the answer is lost on the way back
        else:
            route.continue_()

    page.route(re.compile(re.escape(suffix) + "$"), handle)


@pytest.mark.parametrize(
    ("width", "language"), [(1366, "en"), (390, "en"), (1366, "zh-hans"), (390, "zh-hans")]
)
def test_a_resent_edit_or_regenerate_makes_one_version(browser, e2e_server, width, language, screenshot):
    thread_id = e2e_server.seed("thread", title="Retries")["thread_id"]
    height = 844 if width < 500 else 900
    with thread_page(
        browser, e2e_server, thread_id, View(width=width, height=height, language=language)
    ) as page:
        _resend_after_lost_answers(page, WORDS[language], f"{language}-{width}", screenshot)


def _resend_after_lost_answers(page, words: dict[str, str], name: str, screenshot) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    quiet = _quiet_switch(page)
    send(page, "Which museums should we see?")
    _settled(page, 1)
    quiet["on"] = True
    page.reload()

    edits: list[dict] = []
    _lose_first_answer(page, "/edit", edits)
    first = page.locator("#transcript li.message.role-user").first
    first.get_by_role("button", name=words["edit"], exact=True).click()
    first.locator("form.edit-message textarea").fill("Which beaches should we see?")
    first.get_by_role("button", name=words["send"]).click()
    expect(first.locator(".edit-error")).to_be_visible()  # the page saw no answer
    screenshot(page, f"versions-retry-lost-{name}")
    quiet["on"] = False  # the page that opens after the retry is live again
    with page.expect_navigation(), page.expect_response(lambda r: r.url.endswith("/edit")) as answered:
        first.get_by_role("button", name=words["send"]).click()
    assert answered.value.status == 202
    assert len(edits) == 2 and edits[0]["request_id"] and edits[0]["request_id"] == edits[1]["request_id"]
    _settled(page, 1)
    page.reload()
    _settled(page, 1)
    expect(page.locator("#transcript li.message.role-user").first.locator(".version-label")).to_have_text(
        "2/2"
    )

    quiet["on"] = True
    page.reload()
    regenerations: list[dict] = []
    _lose_first_answer(page, "/regenerate", regenerations)
    regenerate = page.get_by_role("button", name=words["regenerate"], exact=True)
    regenerate.click()
    expect(page.locator("#transcript .version-error")).to_be_visible()
    quiet["on"] = False
    with page.expect_navigation(), page.expect_response(lambda r: r.url.endswith("/regenerate")) as answered:
        regenerate.click()
    assert answered.value.status == 202
    assert regenerations[0]["request_id"] == regenerations[1]["request_id"]
    _settled(page, 1)
    page.reload()
    _settled(page, 1)
    reply = page.locator("#transcript li.message.role-assistant").last
    expect(reply.locator(".version-label")).to_have_text("2/2")
    screenshot(page, f"versions-retry-{name}")
    assert overflow(page) <= 0
    assert errors == []
