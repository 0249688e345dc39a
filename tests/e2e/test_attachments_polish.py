"""Attachments polish in Chromium (issue 26 item 15): a program refused in plain words, a PDF that
opens in the browser with its extracted text one click away, a note when the agent cannot see an
image, and one size format in the composer and the transcript; at 1366 and 390 px, en and zh-Hans."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.chat_support import overflow, thread_in
from tests.support.files import pdf_bytes, png_bytes

pytestmark = pytest.mark.browser

WORDS = {
    "en": {
        "refused": "tool.txt looks like a Windows program; it can't be attached.",
        "no_vision": "This agent cannot see images",
        "text_link": "Extracted text (what the agent reads)",
    },
    "zh-hans": {
        "refused": "tool.txt 看起来是Windows 程序，无法附加。",
        "no_vision": "此智能体看不到图片",
        "text_link": "提取的文本（智能体读取的内容）",
    },
}


@pytest.mark.parametrize(
    ("width", "language"), [(1366, "en"), (390, "en"), (1366, "zh-hans"), (390, "zh-hans")]
)
def test_attachments_say_what_happens_to_them(open_page, e2e_server, tmp_path, width, language, screenshot):
    thread_id = e2e_server.seed("thread", title="Files")["thread_id"]
    page, errors = thread_in(open_page, thread_id, width=width, language=language)
    words = WORDS[language]

    program = tmp_path / "tool.txt"
    program.write_bytes(b"MZ\x90\x00\x03\x00\x00\x00" + b"\0" * 300)
    page.set_input_files("#composer-files", str(program))
    # Refused when picked (issue 39): the reason at once, no chip to remove, nothing sent.
    expect(page.locator("#composer-error")).to_contain_text(words["refused"])
    expect(page.locator("#composer-attachments .attachment-chip")).to_have_count(0)
    expect(page.locator("#transcript .message")).to_have_count(0)

    report, chart = tmp_path / "report.pdf", tmp_path / "chart.png"
    report.write_bytes(pdf_bytes("Revenue grew in the third quarter."))
    chart.write_bytes(png_bytes(64, 64))
    page.set_input_files("#composer-files", [str(report), str(chart)])
    chips = page.locator("#composer-attachments .attachment-chip")
    expect(chips).to_have_count(2)
    # The composer's sizes are the server's format: the same words the transcript will show.
    composer_sizes = [chips.nth(i).locator(".muted").inner_text().split(" · ")[0] for i in range(2)]
    expect(chips.nth(1)).to_contain_text(words["no_vision"])
    page.fill("#composer-input", "Here are the figures")
    page.click("#composer button[type=submit]")
    sent = page.locator("#transcript .message.role-user").last
    expect(sent.locator(".attachment")).to_have_count(2)
    transcript_sizes = [
        sent.locator(".attachment .muted").nth(i).inner_text().split(" · ")[0] for i in range(2)
    ]
    assert composer_sizes == transcript_sizes
    expect(sent.locator(".attachment-no-vision")).to_contain_text(words["no_vision"])
    pdf_link = sent.locator(".attachment-pdf .attachment-name")
    expect(pdf_link).to_have_attribute("href", re.compile(r"\.pdf\?raw=1$"))
    expect(pdf_link).to_have_attribute("target", "_blank")
    expect(page.locator("#transcript .message.role-assistant").last).to_be_visible(timeout=20_000)
    assert overflow(page) <= 0, f"the page scrolls sideways at {width}px"
    screenshot(page, f"attachments-polish-{language}-{width}")
    opened = page.request.get(pdf_link.get_attribute("href"))
    assert opened.headers["content-type"] == "application/pdf"
    assert opened.headers["content-disposition"].startswith("inline")

    with page.expect_navigation():
        sent.get_by_role("link", name=words["text_link"]).click()
    expect(page.locator("body")).to_contain_text("Revenue grew in the third quarter.")
    assert errors == []
    if language != "en":
        page.click("button[name=language][value=en]")
