"""The composer on phones and near its limit, in Chromium at 390 and 1366 px: on a touch screen Enter
adds a line and Send sends; Pin, Edit and Copy are 44 px targets on a phone, 24 px with a mouse; a live
counter shows near the character limit and holds Send back over it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import log_in, phone_height, restore_language, switch_language

pytestmark = [pytest.mark.browser, pytest.mark.layout]

MAX_CHARS = 100_000  # conversations.services.intake.MESSAGE_MAX_CHARS
PLACEHOLDER = {"en": "Write a message…", "zh-hans": "输入消息…"}
OFFLINE = {"en": "Offline model", "zh-hans": "离线模型"}


@pytest.fixture
def device(browser, e2e_server):
    """``device(width=..., touch=...)``: alice's page on a fresh thread, touch-screen or mouse."""
    contexts = []

    def make(*, width: int, touch: bool, language: str = "en"):
        context = browser.new_context(
            base_url=e2e_server.base_url,
            viewport={"width": width, "height": phone_height(width)},
            has_touch=touch,
            is_mobile=touch,
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15000)
        log_in(page)
        page.wait_for_url(f"{e2e_server.base_url}/")
        thread_id = e2e_server.seed("thread", title="Composer")["thread_id"]
        e2e_server.seed(
            "messages", thread_id=thread_id, messages=[("user", "hello"), ("assistant", "hi there")]
        )
        page.goto(f"/threads/{thread_id}/")
        switch_language(page, language)
        expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.mark.parametrize("width", [390, 1366])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_on_a_touch_screen_enter_adds_a_line_and_send_sends(device, width, language):
    page = device(width=width, touch=True, language=language)
    box = page.locator("#composer-input")
    expect(box).to_have_attribute("placeholder", PLACEHOLDER[language])
    box.click()
    page.keyboard.type("first line")
    page.keyboard.press("Enter")
    page.keyboard.type("second line")
    assert box.input_value() == "first line\nsecond line"
    expect(page.locator("#transcript .message.role-user")).to_have_count(1)  # nothing was sent
    page.locator("#composer .composer-actions button[type=submit]").tap()
    sent = page.locator("#transcript .message.role-user").last
    expect(sent).to_contain_text("second line")
    assert "first line\nsecond line" in sent.locator(".message-body").inner_text()
    # The offline model answers in the page's language.
    expect(page.locator("#transcript .message.role-assistant").last).to_contain_text(OFFLINE[language])
    page.screenshot(path=f"/tmp/i39a-touch-{language}-{width}.png")
    restore_language(page, language)


def test_with_a_mouse_enter_still_sends(device):
    page = device(width=1366, touch=False)
    page.fill("#composer-input", "sent with Enter")
    page.press("#composer-input", "Enter")
    expect(page.locator("#transcript .message.role-user").last).to_contain_text("sent with Enter")


@pytest.mark.parametrize(
    ("width", "touch", "smallest"), [(390, True, 44), (390, False, 44), (1366, False, 24)]
)
def test_pin_edit_and_copy_are_targets_a_finger_or_a_pointer_can_hit(device, width, touch, smallest):
    page = device(width=width, touch=touch)
    page.fill("#composer-input", "a turn of its own")  # a real turn: pinnable and editable
    page.locator("#composer .composer-actions button[type=submit]").click()
    expect(page.locator("#transcript .message.role-assistant")).to_have_count(2, timeout=20_000)
    user = page.locator("#transcript .message.role-user").last
    targets = [user.locator(".pin-toggle"), user.locator(".edit-open"), user.locator(".copy-message")]
    for target in targets:
        target.scroll_into_view_if_needed()
        box = target.bounding_box()
        assert box is not None
        assert box["height"] >= smallest and box["width"] >= smallest, (target, box)
    page.screenshot(path=f"/tmp/i39a-targets-{width}-{'touch' if touch else 'mouse'}.png")


@pytest.mark.parametrize("width", [390, 1366])
def test_a_live_counter_shows_near_the_limit_and_holds_send_over_it(device, width):
    page = device(width=width, touch=False)
    box, counter = page.locator("#composer-input"), page.locator("#composer-count")
    send = page.locator("#composer .composer-actions button[type=submit]")
    box.fill("x" * 1000)
    expect(counter).to_be_hidden()
    box.fill("x" * 95_000)
    expect(counter).to_be_visible()
    expect(counter).to_have_text("95,000 / 100,000")
    expect(send).to_be_enabled()
    box.fill("x" * (MAX_CHARS + 5))
    expect(counter).to_have_text("100,005 / 100,000")
    expect(counter).to_have_class("composer-count small muted over")
    expect(send).to_be_disabled()
    expect(box).to_have_attribute("aria-invalid", "true")
    page.screenshot(path=f"/tmp/i39a-counter-{width}.png")
    box.fill("short again")
    expect(counter).to_be_hidden()
    expect(send).to_be_enabled()
