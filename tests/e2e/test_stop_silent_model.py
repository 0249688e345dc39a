"""Stop from the page while the model has not said a word (an OpenAI-protocol server silent for 8 s):
the run ends within a second and the page says so, in Chromium at 1366 and 390 px.

The second is read on the page's own clock, from the click on Stop to the status turning "cancelled":
what a person sees. Timed from the test process it also held Playwright's polling (its retries wait
up to a second apart) and the round trips of a loaded machine (1.33 s once in CI)."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import assert_no_sideways_scroll, phone_height

pytestmark = [pytest.mark.browser, pytest.mark.layout]

SILENT_SECONDS = 8
STOP_WITHIN = 1.0
# Times on the page (performance.now(), ms): the click on Stop, and the first moment #run-status said
# "cancelled" (a re-rendered status counts too: the observer watches the whole document).
RECORD_STOP = """
window.__stop = {};
document.addEventListener("click", (event) => {
  if (event.target.closest("#stop-button") && window.__stop.pressed === undefined) {
    window.__stop.pressed = performance.now();
  }
}, true);
new MutationObserver(() => {
  const status = document.querySelector("#run-status");
  if (status && status.dataset.status === "cancelled" && window.__stop.shown === undefined) {
    window.__stop.shown = performance.now();
  }
}).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ["data-status"]});
"""


@pytest.fixture
def silent_agent(e2e_server, openai_stub):
    """An agent whose endpoint is the stub (no key needed); the stub answers after 8 s of silence."""
    e2e_server.seed("fast_model")
    endpoint_id = e2e_server.seed("endpoint", name="silent stub", fields={"base_url": openai_stub.base_url})[
        "endpoint_id"
    ]
    e2e_server.seed("agent", slug="silent", fields={"endpoint_id": endpoint_id, "model_name": "gpt-4o-mini"})
    openai_stub.reply("an answer nobody reads", delay=SILENT_SECONDS)
    return "silent"


@pytest.mark.parametrize("width", [1366, 390])
def test_stop_ends_a_run_whose_model_is_silent_within_a_second(
    open_page, e2e_server, openai_stub, silent_agent, width
):
    thread_id = e2e_server.seed("thread", title="Think hard", agent=silent_agent)["thread_id"]
    page = open_page(width=width, height=phone_height(width))
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.add_init_script(RECORD_STOP)
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    page.fill("#composer-input", "Think hard about this.")
    page.locator("#composer button[type=submit]").last.click()
    deadline = time.monotonic() + 20
    while not openai_stub.requests:
        assert time.monotonic() < deadline, "the model was never called"
        time.sleep(0.05)
    time.sleep(0.3)  # the call is out; nothing has come back
    page.click("#stop-button")
    expect(page.locator("#run-status")).to_have_attribute("data-status", "cancelled", timeout=5000)
    stop = page.evaluate("window.__stop")
    assert "pressed" in stop and "shown" in stop, stop
    took = (stop["shown"] - stop["pressed"]) / 1000
    assert took < STOP_WITHIN, f"the page showed the run stopped {took:.2f} s after Stop"
    expect(page.locator("#run-status .status-cancelled")).to_be_visible()
    assert_no_sideways_scroll(page, width)
    page.screenshot(path=f"/tmp/i39a-stop-{width}.png")
    assert errors == []
