"""Overflow tail clipping: a trailing batch of tool results too large by itself is saved and replaced."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.compaction.clipping import clip_overflow_tail, trailing_tool_batch_start
from context_engine.formats import TOOL_RESULT_SAVED_KEY
from context_engine.tokens.messages import estimate_message

RESULT = "BEGIN " + "line of output\n" * 600 + "END"


def _tail() -> list:
    return [
        HumanMessage("go", id="h"),
        AIMessage("", id="a", tool_calls=[{"name": "read_log", "args": {}, "id": f"c{i}"} for i in range(3)]),
        *(ToolMessage(RESULT + str(i), id=f"t{i}", tool_call_id=f"c{i}") for i in range(3)),
    ]


def test_trailing_batch_is_saved_and_replaced_with_the_same_ids(store):
    tail = _tail()
    result = clip_overflow_tail(tail, max_tokens=1000, store=store, preview_tokens=300)
    assert [m.id for m in result.messages] == [m.id for m in tail]
    assert [r.id for r in result.replacements] == ["t0", "t1", "t2"]
    assert all(r.additional_kwargs[TOOL_RESULT_SAVED_KEY] is True for r in result.replacements)
    assert all("Tool: read_log" in r.content for r in result.replacements)
    assert sorted(store.files.values()) == sorted(RESULT + str(i) for i in range(3))
    assert sum(estimate_message(m) for m in result.messages[2:]) < 1000
    assert result.messages[:2] == tail[:2]


def test_a_batch_within_the_budget_is_left_alone(store):
    tail = _tail()
    result = clip_overflow_tail(tail, max_tokens=10**6, store=store, preview_tokens=300)
    assert result.messages is tail and result.replacements == () and store.writes == 0


def test_a_tail_not_ending_in_tool_results_is_left_alone(store):
    tail = [*_tail(), AIMessage("done")]
    assert trailing_tool_batch_start(tail) == len(tail)
    assert clip_overflow_tail(tail, max_tokens=1, store=store, preview_tokens=10).replacements == ()


def test_clipping_keeps_results_whole_when_the_file_cannot_be_written(failing_store):
    tail = _tail()
    result = clip_overflow_tail(tail, max_tokens=1000, store=failing_store, preview_tokens=300)
    assert result.messages is tail and result.replacements == () and len(result.failed) == 3


def test_already_saved_results_are_not_replaced_again(store):
    tail = _tail()
    tail[2] = tail[2].model_copy(update={"additional_kwargs": {TOOL_RESULT_SAVED_KEY: True}})
    result = clip_overflow_tail(tail, max_tokens=1000, store=store, preview_tokens=300)
    assert [r.id for r in result.replacements] == ["t1", "t2"] and result.messages[2] is tail[2]
