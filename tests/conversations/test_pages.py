"""Page projections (pressure, tokens, receipts) and the pages' languages."""

from __future__ import annotations

import pytest
from django.urls import reverse

from context_engine.policy.pressure import pressure_now
from context_engine.tokens.messages import format_tokens
from conversations.pages import pressure_view, receipt_parse
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
    def view(usage, trigger=100):
        return pressure_view(pressure_now(usage, trigger_tokens=trigger, context_window=None))

    assert view({"next_llm_input_tokens": 85}).suggest
    assert not view({"next_llm_input_tokens": 8490}, trigger=10000).suggest
    # the ratio is next/T on the current trigger, rounded like the middleware does
    computed = view({"next_llm_input_tokens": 8704}, trigger=10240)
    assert computed.ratio == 0.85 and computed.suggest and computed.hint == "suggest"
    assert view({"next_llm_input_tokens": 100}).hint == "auto"
    assert not view(None).measured and not view({"summary_pressure_ratio": 0.5}).measured
    assert view({"next_llm_input_tokens": 5}, trigger=2).trigger_percent == 100.0


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
    assert receipt.tool_name == "web_search" and receipt.tokens == 5120
    assert receipt.path == "outputs/large_tool_results/web_search-0123456789abcdef.txt"
    assert receipt.preview.startswith("[HEAD]")
    assert receipt_parse("just text") is None
    assert receipt_parse("[Tool result saved]\nTool: x\n") is None  # no path, no link
