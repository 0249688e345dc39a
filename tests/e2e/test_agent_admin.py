"""The admin and the operator's tools (issue 27, items 1–5) in Chromium, in English and 简体中文, at
1366 and 390 px: the model follows the endpoint (a local OpenAI-protocol stub answers /models), the
figures beside the threshold follow what is typed, what a threshold would do, the tool warning, and the
readable compression records with their loss report and links."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import overflow
from tests.support.openai_stub import OpenAIStub

pytestmark = [pytest.mark.browser, pytest.mark.layout]

VARIANTS = [("en", 1366), ("en", 390), ("zh-hans", 1366), ("zh-hans", 390)]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
README_SHOTS = {
    "admin-agent-add-en-1366",
    "admin-agent-form-en-1366",
    "admin-agent-form-zh-hans-390",
    "admin-agent-retune-en-1366",
    "admin-agent-retune-zh-hans-390",
    "admin-compression-record-en-1366",
    "admin-compression-record-zh-hans-390",
}
WORDS = {
    "en": {"lists": "lists 2 models", "unreachable": "could not be reached", "refused": "does not list a model",
           "warning": "web_search needs a search provider", "retune": "What this threshold would do",
           "summarized": "Summarized", "loss": "Identifiers in what was folded"},
    "zh-hans": {"lists": "列出了 2 个模型", "unreachable": "无法连接", "refused": "没有名为 gpt-4o-typo 的模型",
                "warning": "web_search 需要搜索服务", "retune": "这个阈值会带来什么",
                "summarized": "已摘要", "loss": "被折叠内容中的标识符"},
}  # fmt: skip


def _shot(page, name: str) -> None:
    """README screenshots with SAVE_SCREENSHOTS=1; every variant into E2E_SHOTS_DIR when set (review)."""
    if os.environ.get("SAVE_SCREENSHOTS") == "1" and name in README_SHOTS:
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
    if review := os.environ.get("E2E_SHOTS_DIR"):
        Path(review).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(review) / f"{name}.png"), full_page=True)


def _staff_page(open_page, e2e_server, lang: str, width: int):
    page = open_page(staff=True, width=width, height=900)
    page.context.add_cookies([{"name": "django_language", "value": lang, "url": e2e_server.base_url}])
    return page


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


@pytest.fixture
def stub():
    server = OpenAIStub().start()
    server.models = ["gpt-4o-mini", "qwen3-32b"]
    yield server
    server.stop()


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_the_model_follows_the_endpoint_and_a_name_it_lacks_is_refused(
    open_page, e2e_server, stub, lang, width
):
    words, tag = WORDS[lang], f"{lang}-{width}"
    e2e_server.seed(
        "endpoint", name=f"Stub {tag}", fields={"base_url": stub.base_url, "default_model": "gpt-4o-mini"}
    )
    e2e_server.seed(
        "endpoint", name=f"Gone {tag}", fields={"base_url": _closed_port_url(), "default_model": "m"}
    )
    page = _staff_page(open_page, e2e_server, lang, width)
    page.goto("/admin/agent_platform/agent/add/")
    expect(page.locator("#id_model_name")).to_have_value("")  # never the offline model's name
    expect(page.locator("#model-list-button")).to_be_hidden()

    page.select_option("#id_endpoint", label=f"Stub {tag}")
    expect(page.locator("#model-list-status")).to_contain_text(words["lists"])
    expect(page.locator("#id_model_name")).to_have_value("gpt-4o-mini")
    assert page.locator("#model-name-options option").evaluate_all("o => o.map(x => x.value)") == [
        "gpt-4o-mini",
        "qwen3-32b",
    ]
    expect(page.locator("#agent-budget")).to_contain_text("128,000")  # the window follows the model
    page.locator("#id_model_name").scroll_into_view_if_needed()
    _shot(page, f"admin-agent-add-{tag}")

    page.select_option("#id_endpoint", label=f"Gone {tag}")
    expect(page.locator("#model-list-status")).to_contain_text(words["unreachable"])
    expect(page.locator("#model-list-status")).to_have_class(re.compile("model-list-error"))

    page.select_option("#id_endpoint", label=f"Stub {tag}")
    expect(page.locator("#model-list-status")).to_contain_text(words["lists"])
    page.fill("#id_name", f"Agent {tag}")
    page.fill("#id_slug", f"agent-{tag}")
    page.fill("#id_model_name", "gpt-4o-typo")
    with page.expect_navigation(wait_until="load"):
        page.click("input[name=_save]")
    expect(page.locator(".field-model_name .errorlist")).to_contain_text(words["refused"])
    # Only once the page has loaded: the admin form autofocuses its first field (the name), and a fill
    # racing that focus typed the model name into the name field on a loaded machine.
    page.fill("#id_model_name", "qwen3-32b")
    expect(page.locator("#id_model_name")).to_have_value("qwen3-32b")
    expect(page.locator("#id_name")).to_have_value(f"Agent {tag}")
    with page.expect_navigation(wait_until="load"):
        page.click("input[name=_save]")
    expect(page.locator(".messagelist .success")).to_be_visible()
    assert overflow(page) == 0


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_the_figures_and_what_the_threshold_would_do_follow_the_typed_value(
    open_page, e2e_server, lang, width
):
    words, slug = WORDS[lang], f"retune-{lang}-{width}"
    agent_id = e2e_server.seed("agent", slug=slug, fields={"model_name": "gpt-4o"})["agent_id"]
    # Today's trigger is 102,400 (hint 87,035): 5 under, 2 between, 3 over.
    e2e_server.seed("agent_threads", agent=slug, tokens=[1_000] * 5 + [90_000] * 2 + [120_000] * 3)
    page = _staff_page(open_page, e2e_server, lang, width)
    page.goto(f"/admin/agent_platform/agent/{agent_id}/change/")
    budget, retune = page.locator("#agent-budget"), page.locator("#agent-retune")
    expect(budget).to_contain_text("102,400")
    expect(page.locator(".field-tool_warnings")).to_contain_text(words["warning"])
    expect(page.get_by_text(words["retune"])).to_be_visible()
    counts = retune.locator(".retune-count")
    assert counts.all_inner_texts() == ["5", "5", "2", "2", "3", "3"]

    page.fill("#id_summary_threshold", "50")
    expect(budget).to_contain_text("51,200")
    expect(budget.locator("[data-figure=pinned]")).to_contain_text("2,000")
    expect(retune.locator("[data-band=over_trigger] [data-when=typed]")).to_have_text("5")
    assert counts.all_inner_texts() == ["5", "5", "2", "0", "3", "5"]

    page.fill("#id_summary_threshold", "2")  # a quarter of 2,048 caps the pins below the field's 2,000
    expect(budget.locator("[data-figure=pinned]")).to_contain_text("512")
    page.fill("#id_summary_threshold", "50")
    expect(budget).to_contain_text("51,200")
    page.locator("#id_summary_threshold").scroll_into_view_if_needed()
    _shot(page, f"admin-agent-form-{lang}-{width}")
    page.locator(".retune-module").scroll_into_view_if_needed()
    _shot(page, f"admin-agent-retune-{lang}-{width}")
    assert overflow(page) == 0


@pytest.mark.parametrize(("lang", "width"), VARIANTS)
def test_the_compression_records_read_in_words_and_link_the_files(open_page, e2e_server, lang, width):
    words = WORDS[lang]
    thread_id = e2e_server.seed("thread", title=f"Lisbon trip {lang} {width}")["thread_id"]
    history = "outputs/conversation_history/session-e2e.md"
    e2e_server.seed("file", thread_id=thread_id, path=history, text="## Folded\nThe train leaves at 09:12.")
    loss = {"total": 6, "in_summary": 4, "in_view": 0, "one_read": 1, "two_reads": 0, "unreachable": 1,
            "lost_identifiers": ["TKT-4471"]}  # fmt: skip
    record_id = e2e_server.seed(
        "record",
        thread_id=thread_id,
        fields={"trigger": "manual", "level": "summary", "status": "completed", "outcome": "summarized",
                "before_tokens": 4440, "after_tokens": 3970, "file_path": history, "loss_report": loss},
    )["record_id"]  # fmt: skip
    page = _staff_page(open_page, e2e_server, lang, width)
    page.goto("/admin/compression/compressionrecord/?outcome__exact=summarized")
    row = page.locator("#result_list tbody tr", has_text=f"Lisbon trip {lang} {width}")
    expect(row).to_contain_text(words["summarized"])
    expect(row).to_contain_text("4,440 → 3,970")
    expect(row).not_to_contain_text(thread_id)
    _shot(page, f"admin-compression-records-{lang}-{width}")
    assert overflow(page) == 0

    page.goto(f"/admin/compression/compressionrecord/{record_id}/change/")
    expect(page.locator(".record-loss")).to_contain_text(words["loss"])
    expect(page.locator(".record-loss")).to_contain_text("TKT-4471")
    expect(page.locator(".record-thread-link")).to_have_attribute("href", f"/threads/{thread_id}/")
    page.locator(".record-files").scroll_into_view_if_needed()
    _shot(page, f"admin-compression-record-{lang}-{width}")
    assert overflow(page) == 0
    page.click(".record-files .history-link")
    expect(page.locator("body")).to_contain_text("The train leaves at 09:12.")
