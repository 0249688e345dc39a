"""The thread page in headless Chromium against a live Daphne server (HTTP and the thread's socket)."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.conversations.page_support import usage_at

pytestmark = pytest.mark.browser

# Records every text the streaming bubble shows, so a test can tell a streamed reply from one that
# only appeared whole.
RECORD_STREAM = """
document.addEventListener("DOMContentLoaded", () => {
  window.__streamed = [];
  const body = document.getElementById("stream-body");
  if (!body) return;
  new MutationObserver(() => window.__streamed.push(body.textContent)).observe(
    body, {childList: true, characterData: true, subtree: true});
});
"""


def _open_thread(page, server, title: str, usage: dict | None = None) -> str:
    thread_id = server.seed("thread", title=title)["thread_id"]
    if usage is not None:
        server.seed("usage", thread_id=thread_id, usage=usage)
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    return thread_id


def _meter_width(page) -> float:
    style = page.locator("#meter-trigger").get_attribute("style") or ""
    return float(re.search(r"width:\s*([\d.]+)%", style).group(1))


def test_new_thread_from_the_list_then_a_streamed_reply(page, e2e_server, screenshot):
    page.add_init_script(RECORD_STREAM)
    page.select_option("select[name=agent]", "assistant")
    page.fill("input[name=title]", "Trip planning")
    page.click("text=New thread")
    page.wait_for_url(re.compile(r"/threads/[0-9a-f-]+/$"))
    expect(page.locator("h1")).to_have_text("Trip planning")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")

    page.fill("#composer-input", "Hello, who are you?")
    page.click("#composer button[type=submit]")

    expect(page.locator("#transcript .message.role-user").last).to_contain_text("Hello, who are you?")
    reply = page.locator("#transcript .message.role-assistant").last
    expect(reply).to_contain_text("Offline model")
    expect(page.locator("#composer-input")).to_have_value("")
    # The reply arrived in pieces over the socket before the whole message replaced them.
    streamed = page.evaluate("window.__streamed")
    assert any(0 < len(text) and "Offline" in text for text in streamed), streamed
    expect(page.locator("#stream")).to_be_hidden()
    expect(page.locator("#run-status")).not_to_contain_text("working")

    # A tool round trip: the call and its result are shown in the transcript.
    page.fill("#composer-input", "Please search the knowledge base for the refund policy")
    page.keyboard.press("Enter")
    expect(page.locator(".tool-call summary").last).to_contain_text("Calls query_kb")
    expect(page.locator("#transcript .message.role-tool").last).to_contain_text("Result of query_kb")
    expect(page.locator("#transcript .message.role-assistant").last).to_contain_text(
        "Searching the knowledge base"
    )
    expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded")
    expect(page.locator("#meter-trigger")).to_be_visible()  # the run's token_usage reached the panel
    screenshot(page, "thread-normal")


def test_hint_at_0_85_and_not_at_0_849(page, e2e_server):
    _open_thread(page, e2e_server, "Just below", usage_at(0.849))
    expect(page.locator("#state-panel")).to_contain_text("84.9%")
    expect(page.locator("#compression-hint")).to_have_count(0)
    expect(page.locator("#compress-button")).to_have_count(0)

    _open_thread(page, e2e_server, "At the line", usage_at(0.85))
    expect(page.locator("#compression-hint")).to_be_visible()
    expect(page.locator("#compression-hint")).to_contain_text("85.0%")
    expect(page.locator("#compress-button")).to_be_enabled()


def _exchange(page, text: str) -> None:
    replies = page.locator("#transcript .message.role-assistant")
    count = replies.count()
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")
    expect(replies).to_have_count(count + 1)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded")


def test_compress_button_completes_and_the_meter_falls(page, e2e_server, screenshot):
    thread_id = _open_thread(page, e2e_server, "Long research thread")
    # Long enough that a summary of them is smaller than they are (issue 24: never bigger).
    detail = " We want the old town, the museums, the coast and day trips by train. " * 6
    for text in (
        "We are planning a trip to Lisbon." + detail,
        "I prefer trains to planes." + detail,
        "Budget is 900 euros.",
    ):
        _exchange(page, text)
    e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))
    page.reload()
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    before = _meter_width(page)
    assert before == pytest.approx(93.0)
    screenshot(page, "thread-hint")

    requests = []
    page.on("request", lambda r: requests.append(r) if "/compress?preview_id=" in r.url else None)
    page.click("#compress-button")
    expect(page.locator("#compress-preview")).to_be_visible()  # what it would fold, before it does
    screenshot(page, "compress-preview")
    page.click("#compress-apply")

    expect(page.locator("#compression-status")).to_have_attribute("data-status", "completed", timeout=20_000)
    expect(page.locator("#compression-status")).to_contain_text("the request went from")
    expect(page.locator("#compression-hint")).to_have_count(0)
    assert _meter_width(page) < before
    assert len(requests) == 1 and requests[0].method == "POST"
    screenshot(page, "thread-compressed")


def test_button_is_disabled_while_a_run_is_active_and_after_a_reload(page, e2e_server):
    thread_id = _open_thread(page, e2e_server, "Busy thread", usage_at(0.9))
    expect(page.locator("#compress-button")).to_be_enabled()

    # A run starts elsewhere (another tab, the API): the socket says so and the button follows.
    e2e_server.seed("run", thread_id=thread_id, status="running")
    expect(page.locator("#compress-button")).to_be_disabled()
    expect(page.locator("#run-status")).to_have_attribute("data-status", "running")

    # Busy state comes from the server: a reload (or a second tab) sees it too.
    page.reload()
    expect(page.locator("#compress-button")).to_be_disabled()
    # The reloaded page only hears of the finish once its socket is open (a fresh page does no catch-up).
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")

    e2e_server.seed("finish_runs", thread_id=thread_id)
    expect(page.locator("#compress-button")).to_be_enabled()


def test_button_is_disabled_while_the_agent_waits_for_an_answer(page, e2e_server):
    thread_id = _open_thread(page, e2e_server, "Question thread", usage_at(0.9))
    e2e_server.seed("run", thread_id=thread_id, status="interrupted")
    expect(page.locator("#compress-button")).to_be_disabled()
    expect(page.locator("#answer-form")).to_be_visible()


def test_a_409_shows_a_friendly_message(page, e2e_server):
    # The server turns busy between render and click: the page still shows an enabled button. The
    # state fragment is cut off before the page loads, so no refresh already in flight (the socket's
    # catch-up) can read the busy run and disable the button first.
    page.route(
        re.compile(r".*/fragments/state$"),
        lambda route: route.abort(),
    )
    thread_id = _open_thread(page, e2e_server, "Race", usage_at(0.9))
    e2e_server.seed("run", thread_id=thread_id, status="queued")
    page.click("#compress-button")
    expect(page.locator("#compress-preview")).to_be_visible()  # the preview knows the thread is busy
    expect(page.locator("#compress-notice")).to_be_visible()
    expect(page.locator("#compress-notice")).to_contain_text("busy")
    e2e_server.seed("finish_runs", thread_id=thread_id)


def test_live_compression_status_started_then_failed(page, e2e_server):
    thread_id = _open_thread(page, e2e_server, "Auto compression", usage_at(0.9))
    e2e_server.seed(
        "event",
        thread_id=thread_id,
        type="compression",
        payload={"status": "started", "level": "summary", "before_tokens": 95000, "after_tokens": 95000},
    )
    expect(page.locator("#compression-status")).to_have_attribute("data-status", "started")
    expect(page.locator("#compress-button")).to_be_disabled()
    # As a run does: the failure's audit record first, then the event.
    e2e_server.seed("failed_compression", thread_id=thread_id, error="summary model returned nothing")
    expect(page.locator("#compression-status")).to_contain_text("summary model returned nothing")
    expect(page.locator("#compress-button")).to_be_enabled()


def test_the_page_renders_in_simplified_chinese(page, e2e_server, screenshot):
    _open_thread(page, e2e_server, "中文会话", usage_at(0.9))
    page.click("button[name=language][value=zh-hans]")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("#compress-button")).to_have_text("压缩上下文")
    expect(page.locator("#composer button[type=submit]")).to_have_text("发送")
    expect(page.locator("#compression-hint")).to_contain_text("下一次请求已达到压缩阈值的 90.0%")
    screenshot(page, "thread-zh-hans")
    # and back, so later tests in this browser see English
    page.click("button[name=language][value=en]")
    expect(page.locator("html")).to_have_attribute("lang", "en")


def test_pin_a_message_then_preview_and_compress_keeps_it(page, e2e_server):
    thread_id = _open_thread(page, e2e_server, "Pinned rule")
    for text in (
        "Rule: always quote ticket TRIP-2024 and https://example.com/lisbon/plan.",
        "I prefer trains to planes.",
        "Budget is 900 euros.",
        "Hotels near Alfama please.",
        "Two nights only.",
        "Vegetarian food.",
    ):
        _exchange(page, text)
    first = page.locator("#transcript .message.role-user").first
    first.locator(".pin-toggle").click()
    expect(first.locator(".pin-toggle")).to_have_attribute("aria-pressed", "true")
    page.reload()
    expect(page.locator("#transcript .message.role-user").first.locator(".pin-toggle")).to_have_attribute(
        "aria-pressed", "true"
    )

    e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))
    page.reload()
    page.click("#compress-button")
    preview = page.locator("#compress-preview")
    expect(preview).to_contain_text("pinned message word for word")
    page.click("#compress-apply")
    expect(page.locator("#compression-status")).to_have_attribute("data-status", "completed", timeout=20_000)
    expect(page.locator("#compress-preview")).to_have_count(0)


def test_a_job_that_ends_before_the_answer_to_its_own_request_still_shows_its_outcome(page, e2e_server):
    """A fast job ends (its socket events arrive) before the 202 answering the POST that queued it: that
    answer's "queued" is old news, and must not draw a running card that nothing would ever take down
    (seen in CI under load: the card stayed on "Compressing context…")."""
    thread_id = _open_thread(page, e2e_server, "Fast job")
    detail = " We want the old town, the museums, the coast and day trips by train. " * 6
    for text in ("We are planning a trip to Lisbon." + detail, "I prefer trains." + detail, "Budget is 900."):
        _exchange(page, text)
    e2e_server.seed("usage", thread_id=thread_id, usage=usage_at(0.93))
    page.reload()
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")

    def answer_once_the_job_ended(route) -> None:
        response = route.fetch()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            records = e2e_server.seed("records", thread_id=thread_id)["records"]
            if any(r["trigger"] == "manual" and r["status"] == "completed" for r in records):
                break
            time.sleep(0.1)
        time.sleep(1.0)  # the job's last events reach the page over its socket first
        route.fulfill(response=response)

    page.route("**/compress?preview_id=*", answer_once_the_job_ended)
    page.click("#compress-button")
    expect(page.locator("#compress-preview")).to_be_visible()
    answers: list[str] = []
    page.on("response", lambda response: answers.append(response.url))
    page.click("#compress-apply")
    # The page reads the state once more after the (late) answer: the card must say what happened then.
    deadline = time.monotonic() + 30
    while not _state_read_after(answers, "/compress?preview_id=") and time.monotonic() < deadline:
        page.wait_for_timeout(100)

    expect(page.locator("#compression-status")).to_have_attribute("data-status", "completed")
    expect(page.locator("#compress-button")).to_have_count(0)  # the thread is below the hint line again


def _state_read_after(urls: list[str], marker: str) -> bool:
    """Whether the state fragment was fetched after the response whose address holds ``marker``."""
    after = next((i for i, url in enumerate(urls) if marker in url), None)
    return after is not None and any("/fragments/state" in url for url in urls[after + 1 :])
