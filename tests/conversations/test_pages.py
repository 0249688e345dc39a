"""Page projections (pressure, tokens, receipts) and the pages' languages."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations.pages import format_tokens, pressure_from_usage, receipt_parse
from tests.conversations.page_support import RECEIPT, detail_url, usage_at

pytestmark = pytest.mark.django_db


# --- i18n --------------------------------------------------------------------------------------


def test_pages_render_in_simplified_chinese_after_set_language(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.9))
    response = owner_client.post(reverse("set_language"), {"language": "zh-hans", "next": detail_url(thread)})
    assert response.status_code == 302
    html = owner_client.get(detail_url(thread)).content.decode()
    assert '<html lang="zh-hans">' in html
    assert "压缩上下文" in html  # the button
    assert "发送" in html  # the composer
    assert "Compress context" not in html


def test_english_is_the_default(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.9))
    html = owner_client.get(detail_url(thread)).content.decode()
    assert '<html lang="en">' in html and "Compress context" in html


# --- pure projections --------------------------------------------------------------------------


def test_pressure_projection_boundary_and_fallbacks():
    assert pressure_from_usage({"summary_pressure_ratio": 0.85, "next_llm_input_tokens": 1}).suggest
    assert not pressure_from_usage({"summary_pressure_ratio": 0.849, "next_llm_input_tokens": 1}).suggest
    # no ratio recorded: computed from next/T, rounded like the middleware does
    computed = pressure_from_usage({"next_llm_input_tokens": 8704, "summary_trigger_tokens": 10240})
    assert computed.ratio == 0.85 and computed.suggest
    # next_llm_input_tokens falls back to llm_input_tokens
    assert pressure_from_usage({"llm_input_tokens": 10, "summary_trigger_tokens": 100}).tokens == 10
    assert not pressure_from_usage(None).measured
    assert (
        pressure_from_usage(
            {"summary_pressure_ratio": 2.0, "next_llm_input_tokens": 5, "summary_trigger_tokens": 2}
        ).trigger_percent
        == 100.0
    )


def test_token_formatting():
    assert [format_tokens(v) for v in (None, 950, 1000, 12345, 102400, 1_050_000)] == [
        "–",
        "950",
        "1K",
        "12.3K",
        "102K",
        "1.05M",
    ]


def test_receipt_parsing():
    receipt = receipt_parse(RECEIPT)
    assert receipt is not None
    assert receipt.tool == "web_search" and receipt.approx_tokens == "5120"
    assert receipt.path == "outputs/large_tool_results/web_search-0123456789abcdef.txt"
    assert receipt.preview.startswith("[HEAD]")
    assert receipt_parse("just text") is None
    assert receipt_parse("[Tool result saved]\nTool: x\n") is None  # no path, no link
