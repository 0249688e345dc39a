"""Stop, the queue and its reading order, streamed replies and reloads mid-reply, in Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import LONG_REPLY, open_thread, send, thread

pytestmark = pytest.mark.browser


def test_stop_ends_the_run_and_keeps_what_was_streamed_marked_as_stopped(page, e2e_server, slow_model):
    open_thread(page, thread(e2e_server, "Stop me"))
    send(page, LONG_REPLY)
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
    send(page, "Are you still there?")
    expect(page.locator("#transcript .message.role-assistant").last).to_contain_text("Are you still there?")


def test_a_message_sent_during_a_run_shows_queued_after_that_runs_reply(page, e2e_server, slow_model):
    open_thread(page, thread(e2e_server, "Queue"))
    send(page, "first question")
    expect(page.locator("#stream-body")).to_contain_text("Offline", timeout=20000)
    send(page, "second question")
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
    open_thread(page, thread(e2e_server, "Dequeue"))
    send(page, "keep this one")
    expect(page.locator("#stream-body")).to_contain_text("Offline", timeout=20000)
    send(page, "drop this one")
    dropped = page.locator("#transcript .message.role-user", has_text="drop this one")
    dropped.get_by_role("button", name="Remove from queue").click()
    expect(dropped.locator(".badge-cancelled")).to_be_visible()
    expect(page.locator("#transcript .message.role-assistant")).to_have_count(1, timeout=30000)
    expect(page.locator("#stream")).to_be_hidden()
    page.reload()
    expect(page.locator("#transcript .message.role-assistant")).to_have_count(1)
    expect(dropped.locator(".badge-cancelled")).to_be_visible()


def test_a_streamed_reply_is_plain_text_then_replaced_by_the_rendered_message(page, e2e_server, slow_model):
    open_thread(page, thread(e2e_server, "Stream then render"))
    send(page, "**bold** please")
    expect(page.locator("#stream-body")).to_contain_text("**bold**", timeout=30000)  # plain while streaming
    reply = page.locator("#transcript .message.role-assistant").last
    expect(reply.locator(".message-body strong")).to_have_text("bold", timeout=30000)
    expect(page.locator("#stream")).to_be_hidden()


def test_a_reload_during_a_reply_shows_the_text_streamed_so_far_and_continues(page, e2e_server, slow_model):
    thread_id = thread(e2e_server, "Reload")
    open_thread(page, thread_id)
    send(page, LONG_REPLY)
    expect(page.locator("#stream-body")).to_contain_text("You said", timeout=20000)
    page.reload()
    # Rendered by the server: there before any new token arrives.
    assert "Offline model" in page.locator("#stream-body").inner_text()
    expect(page.locator("#stream")).to_be_visible()
    reply = page.locator("#transcript .message.role-assistant").last
    expect(reply).to_contain_text("Tell me everything about trains", timeout=30000)
    expect(page.locator("#stream")).to_be_hidden()
    assert reply.locator(".message-body").inner_text().count("trains") == 6
