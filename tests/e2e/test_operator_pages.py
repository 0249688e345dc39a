"""The operators' pages in Chromium (issue 39, item 8), at 1366 and 390 px, in English and 简体中文:
usage is reached from the admin index, styled under the site's CSP (no violation, its stylesheet
applied) and read without sideways scroll on a phone; the agent form takes an endpoint's only model by
itself, an unknown name gets its own error and nothing else; the retune table sits right under the
threshold and says when the window capped T."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import assert_no_sideways_scroll, send_and_wait
from tests.support.openai_stub import OpenAIStub

pytestmark = [pytest.mark.browser, pytest.mark.layout]

VARIANTS = [("en", 1366), ("en", 390), ("zh-hans", 1366), ("zh-hans", 390)]
WORDS = {
    "en": {"reports": "Reports", "usage": "Usage", "replies": "Replies", "total": "Total",
           "capped": "capped at 90% of the 50,000-token window", "refused": "does not list a model named"},
    "zh-hans": {"reports": "报表", "usage": "用量", "replies": "回复数", "total": "合计",
                "capped": "上限为 50,000 token 窗口的 90%", "refused": "没有名为 gpt-4o-typo 的模型"},
}  # fmt: skip
# Recorded from inside the page (an init script is not subject to the page's policy).
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


def _shot(page, name: str) -> None:
    """Every variant into E2E_SHOTS_DIR when set (for a reviewer to look at)."""
    if review := os.environ.get("E2E_SHOTS_DIR"):
        Path(review).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(review) / f"{name}.png"), full_page=True)


def _staff_page(open_page, e2e_server, lang: str, width: int):
    page = open_page(staff=True, width=width, height=844 if width < 500 else 900)
    page.context.add_init_script(RECORD_VIOLATIONS)
    page.context.add_cookies([{"name": "django_language", "value": lang, "url": e2e_server.base_url}])
    return page


@pytest.fixture(scope="module")
def a_reply(browser, e2e_server):
    """One answered message, so the usage page has a row of alice's."""
    thread_id = e2e_server.seed("thread", title="Usage for the reports")["thread_id"]
    context = browser.new_context(base_url=e2e_server.base_url)
    page = context.new_page()
    page.set_default_timeout(20000)
    from tests.e2e.chat_support import log_in

    log_in(page, "alice")
    page.goto(f"/threads/{thread_id}/")
    expect(page.locator("#socket-status")).to_have_attribute("data-state", "open")
    send_and_wait(page, "Hello there.")
    context.close()


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_usage_is_linked_from_the_index_and_styled_under_the_policy(
    open_page, e2e_server, a_reply, lang, width
):
    words = WORDS[lang]
    page = _staff_page(open_page, e2e_server, lang, width)
    page.goto("/admin/")
    reports = page.locator("#reports-module")
    expect(reports.locator("caption")).to_have_text(words["reports"])
    assert_no_sideways_scroll(page, width)
    _shot(page, f"admin-index-{lang}-{width}")
    with page.expect_navigation():
        reports.get_by_role("link", name=words["usage"], exact=True).click()
    assert page.url.endswith("/admin/usage/")
    expect(page.locator("#content h1")).to_have_text(words["usage"])
    page.goto("/admin/usage/?group=user")
    row = page.locator("#usage-table tbody tr", has_text="alice")
    expect(row).to_have_count(1)
    # The stylesheet is a file the policy allows: its rules are in force, and nothing was refused.
    assert page.locator(".usage-filter").evaluate("e => getComputedStyle(e).display") == "flex"
    replies = row.locator("td.num").first
    if width < 500:  # a card per row: each figure labelled, the header row out of sight
        assert replies.evaluate("e => getComputedStyle(e).display") == "flex"
        assert replies.evaluate("e => getComputedStyle(e, '::before').content") == f'"{words["replies"]}"'
        assert page.locator("#usage-table thead").bounding_box()["height"] <= 1
    else:
        expect(page.locator("#usage-table thead th").nth(1)).to_have_text(words["replies"])
    assert int(replies.inner_text().split()[-1]) >= 1
    expect(page.locator("#usage-table tfoot td").first).to_have_text(words["total"])
    assert page.evaluate("window.__csp") == []
    assert_no_sideways_scroll(page, width)
    _shot(page, f"admin-usage-{lang}-{width}")


@pytest.fixture
def one_model_stub():
    server = OpenAIStub().start()
    server.models = ["smollm2-135m"]
    yield server
    server.stop()


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_the_agent_form_takes_an_endpoints_only_model(open_page, e2e_server, one_model_stub, lang, width):
    tag = f"{lang}-{width}"
    e2e_server.seed(
        "endpoint", name=f"One {tag}", fields={"base_url": one_model_stub.base_url, "default_model": ""}
    )
    page = _staff_page(open_page, e2e_server, lang, width)
    page.goto("/admin/agent_platform/agent/add/")
    page.select_option("#id_endpoint", label=f"One {tag}")
    expect(page.locator("#id_model_name")).to_have_value("smollm2-135m")
    page.fill("#id_name", f"Only {tag}")
    page.fill("#id_slug", f"only-{tag}")
    page.fill("#id_context_window", "8192")
    expect(page.locator("#id_model_name")).to_have_value("smollm2-135m")
    with page.expect_navigation(wait_until="load"):
        page.click("input[name=_save]")
    expect(page.locator(".messagelist .success")).to_be_visible()

    page.goto("/admin/agent_platform/agent/add/")
    page.select_option("#id_endpoint", label=f"One {tag}")
    expect(page.locator("#id_model_name")).to_have_value("smollm2-135m")
    page.fill("#id_name", f"Typo {tag}")
    page.fill("#id_slug", f"typo-{tag}")
    page.fill("#id_model_name", "gpt-4o-typo")
    with page.expect_navigation(wait_until="load"):
        page.click("input[name=_save]")
    errors = page.locator(".field-model_name .errorlist li")
    expect(errors).to_have_count(1)
    expect(errors).to_contain_text(WORDS[lang]["refused"])
    expect(page.locator("body")).not_to_contain_text("offline-extractive")
    page.locator("#id_model_name").scroll_into_view_if_needed()
    assert_no_sideways_scroll(page, width)
    _shot(page, f"admin-agent-unknown-model-{tag}")


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_the_retune_table_sits_under_the_threshold_and_says_when_t_is_capped(
    open_page, e2e_server, lang, width
):
    slug = f"beside-{lang}-{width}"
    agent_id = e2e_server.seed("agent", slug=slug, fields={"model_name": "gpt-4o"})["agent_id"]
    e2e_server.seed("agent_threads", agent=slug, tokens=[1_000] * 3 + [60_000] * 2)
    page = _staff_page(open_page, e2e_server, lang, width)
    page.goto(f"/admin/agent_platform/agent/{agent_id}/change/")
    threshold = page.locator(".form-row.field-summary_threshold").bounding_box()
    table = page.locator("#agent-retune").bounding_box()
    keep = page.locator(".form-row.field-summary_keep_messages").bounding_box()
    assert threshold["y"] < table["y"] < keep["y"]
    # Beside the field: it starts within the height of the threshold's row (its figures) and a heading.
    assert table["y"] - (threshold["y"] + threshold["height"]) < 120, (threshold, table)
    expect(page.locator(".retune-capped")).to_have_count(0)

    page.fill("#id_context_window", "50000")
    capped = page.locator('.retune-capped[data-when="typed"]')
    expect(capped).to_contain_text(WORDS[lang]["capped"])
    expect(page.locator('.retune-capped[data-when="today"]')).to_have_count(0)
    page.locator("#agent-retune").scroll_into_view_if_needed()
    assert_no_sideways_scroll(page, width)
    assert page.evaluate("window.__csp") == []
    _shot(page, f"admin-agent-retune-beside-{lang}-{width}")
