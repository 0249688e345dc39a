"""Pair-safe cutoff: keep the last N messages, cap the tail by tokens, never split a tool call."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.summary.cutoff import find_cutoff, pair_safe_index
from context_engine.summary.history import build_summary_message
from context_engine.tokens.messages import estimate_message


def _turn(i: int, *, tools: int = 1, size: int = 10) -> list:
    calls = [{"name": "shell", "args": {"n": j}, "id": f"c{i}_{j}"} for j in range(tools)]
    return [
        HumanMessage(f"question {i}"),
        AIMessage("", tool_calls=calls),
        *(ToolMessage("out " * size, tool_call_id=f"c{i}_{j}") for j in range(tools)),
        AIMessage(f"answer {i}"),
    ]


def _pairs_intact(messages: list, cutoff: int) -> bool:
    kept_ids = {m.tool_call_id for m in messages[cutoff:] if isinstance(m, ToolMessage)}
    cut_calls = {c["id"] for m in messages[:cutoff] if isinstance(m, AIMessage) for c in m.tool_calls}
    return not (kept_ids & cut_calls)


def test_keeps_the_last_n_messages_when_the_boundary_is_safe():
    messages = [m for i in range(5) for m in _turn(i)]  # 4 messages per turn
    assert find_cutoff(messages, keep_messages=4) == 16


def test_cutoff_on_a_tool_message_moves_back_to_its_ai_message():
    messages = [m for i in range(3) for m in _turn(i, tools=3)]  # H, AI, T, T, T, AI per turn
    cutoff = find_cutoff(messages, keep_messages=4)  # len-4 lands on the 2nd tool result of turn 2
    assert isinstance(messages[cutoff], AIMessage) and messages[cutoff].tool_calls
    assert cutoff == 13 and _pairs_intact(messages, cutoff)


def test_returns_zero_when_there_is_nothing_to_cut():
    assert find_cutoff(_turn(0), keep_messages=10) == 0
    assert find_cutoff([], keep_messages=1) == 0
    assert find_cutoff([HumanMessage("only")], keep_messages=0) == 0


def test_an_earlier_summary_alone_is_not_worth_cutting():
    messages = [build_summary_message("old", file_path="f"), *_turn(1)]
    assert find_cutoff(messages, keep_messages=4) == 0
    assert find_cutoff([*messages, *_turn(2)], keep_messages=4) == 5


def test_huge_messages_are_cut_to_keep_the_tail_within_the_token_cap():
    messages = [m for i in range(3) for m in _turn(i, size=2000)]  # each tool result ~2000+ tokens
    cap = estimate_message(messages[-1]) + estimate_message(messages[-2]) + 1
    cutoff = find_cutoff(messages, keep_messages=10, max_tail_tokens=cap)
    # len-2 is a tool result: the cap moves the cut forward past it rather than back to its call
    assert cutoff == len(messages) - 1
    assert sum(estimate_message(m) for m in messages[cutoff:]) <= cap
    assert find_cutoff(messages, keep_messages=10) == 1  # without the cap: back to the call of index 2


def test_token_cap_never_leaves_the_tail_empty():
    messages = [HumanMessage("a"), AIMessage("b"), HumanMessage("x " * 50_000)]
    assert find_cutoff(messages, keep_messages=10, max_tail_tokens=10) == 2


def test_a_trailing_tool_batch_keeps_its_ai_message_even_over_the_cap():
    messages = [HumanMessage("a"), AIMessage("b"), *_turn(1, tools=2, size=5000)[:-1]]
    cutoff = find_cutoff(messages, keep_messages=10, max_tail_tokens=100)
    assert cutoff == 3 and messages[cutoff].tool_calls


def test_orphan_tool_messages_move_forward():
    messages = [HumanMessage("a"), ToolMessage("x", tool_call_id="nope"), HumanMessage("b"), AIMessage("c")]
    assert pair_safe_index(messages, 1) == 2


@settings(max_examples=150, deadline=None)
@given(
    shape=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 400)), min_size=1, max_size=12),
    keep=st.integers(0, 15),
    cap=st.one_of(st.none(), st.integers(1, 3000)),
)
def test_cutoff_is_always_pair_safe_and_keeps_the_latest_message(shape, keep, cap):
    messages = [m for i, (tools, size) in enumerate(shape) for m in _turn(i, tools=tools, size=size)]
    cutoff = find_cutoff(messages, keep_messages=keep, max_tail_tokens=cap)
    assert 0 <= cutoff < len(messages)
    assert not isinstance(messages[cutoff], ToolMessage) or cutoff == 0
    assert _pairs_intact(messages, cutoff)
    if cutoff:
        assert (
            len(messages) - cutoff <= max(keep, 1)
            or cap is not None
            or isinstance(messages[cutoff], AIMessage)
        )
