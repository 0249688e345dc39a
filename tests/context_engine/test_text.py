"""The one owner of storable text: NUL and lone surrogates become U+FFFD, whatever carries them."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, ToolMessage

from context_engine.summary.identifiers import LossReport
from context_engine.text import clean_message, clean_str, clean_text

LONE = json.loads('"a\\ud800b"')  # what a model or a JSON client sends as an escape


def test_a_lone_surrogate_and_nul_become_the_replacement_character():
    assert clean_str(LONE) == "a\ufffdb"
    assert clean_str("x\x00y") == "x\ufffdy"
    assert clean_str("x\x00y", keep_nul=True) == "x\x00y"
    clean_str(LONE).encode("utf-8")  # now encodable


def test_a_surrogate_pair_split_in_two_code_points_is_joined_back():
    assert clean_str("\ud83d\ude00") == "😀"


def test_clean_text_is_unchanged_when_clean_and_reaches_nested_keys_and_values():
    value = {"path": ["ok", "读书"], 3: ("é",)}
    assert clean_text(value) == value
    assert clean_text({LONE: [{"q": LONE}]}) == {"a\ufffdb": [{"q": "a\ufffdb"}]}


def test_a_tool_call_with_a_lone_surrogate_is_cleaned_in_its_arguments_and_raw_payload():
    message = AIMessage(
        content=LONE,
        id="ai-1",
        tool_calls=[{"id": "c1", "name": "write_file", "args": {"content": LONE}}],
        additional_kwargs={"tool_calls": [{"function": {"arguments": json.dumps({"content": LONE})}}]},
    )
    cleaned = clean_message(message)
    assert cleaned.id == "ai-1" and cleaned.content == "a\ufffdb"
    assert cleaned.tool_calls[0]["args"] == {"content": "a\ufffdb"}
    json.dumps(cleaned.model_dump(), ensure_ascii=False).encode("utf-8")


def test_a_clean_message_is_returned_as_is_and_nul_is_kept_for_the_checkpoint():
    message = ToolMessage(content="bytes\x00here", tool_call_id="c1", id="t1")
    assert clean_message(message) is message


def test_a_loss_report_with_garbage_figures_reads_as_zero_never_raises():
    huge = "1" * 5000  # int() of it raises ValueError (more than 4,300 digits)
    for garbage in (float("inf"), 1e999, huge, "²", -5, 10**40, "1e999", None, [1]):
        report = LossReport.from_dict(
            {"in_summary": garbage, "unreachable": garbage, "lost_kinds": {"a": garbage}}
        )
        assert report.total == 0 and report.lost_kinds == {"a": 0}
    assert LossReport.from_dict({"in_summary": "7", "unreachable": 2}).total == 9
