"""Issue 39 item 9: a range of one message reads "#10", never "#10–#10": the preview's fold, the memory
panel and the transcript's boundary, in English and 简体中文."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.utils import translation

PREVIEW = {"status": "ready", "preview_id": "p", "before_tokens": 900, "estimated_after_tokens": 400}


def _preview(first: int, last: int) -> dict:
    folded = {"count": last - first + 1, "first_seq": first, "last_seq": last, "tokens": 300}
    return {**PREVIEW, "folded": folded, "kept_tail": {"count": 2, "tokens": 100}, "pinned": {"count": 0}}


@pytest.mark.parametrize(
    ("language", "one", "many"),
    [
        ("en", "Folds message #10 (300 tokens) into a summary.", "Folds 3 messages (#10–#12, 300 tokens)"),
        ("zh-hans", "将第 #10 条消息（300 token）折叠为一份摘要。", "将 3 条消息（#10–#12，300 token）"),
    ],
)
def test_the_preview_names_one_folded_message_by_its_number(language, one, many):
    with translation.override(language):
        single = render_to_string("compression/_compress_preview.html", {"preview": _preview(10, 10)})
        several = render_to_string("compression/_compress_preview.html", {"preview": _preview(10, 12)})
    assert one in single and "#10–#10" not in single
    assert many in several


def test_the_memory_panel_and_the_boundary_name_a_single_message_once():
    memory = {"active": True, "folded_count": 1, "folded_last_seq": 1, "kept_count": 2}
    panel = render_to_string("compression/_memory_panel.html", {"memory": memory})
    assert "(#1)" in panel and "#1–#1" not in panel
    message = {"seq": 2, "role": "assistant", "content": "hi", "run_id": None}
    row = render_to_string(
        "conversations/_message.html", {"message": message, "boundary_seq": 1, "saved_paths": set()}
    )
    assert "a summary of #1." in row and "#1–#1" not in row
    row = render_to_string(
        "conversations/_message.html",
        {"message": {**message, "seq": 5}, "boundary_seq": 4, "saved_paths": set()},
    )
    assert "a summary of #1–#4." in row
