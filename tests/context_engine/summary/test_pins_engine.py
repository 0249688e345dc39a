"""Pinned messages in the engine: pair-safe closure, split of a folded span, restore after compaction."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.summary.pins import (
    pin_group,
    pin_room,
    pinned_closure,
    pinned_tokens,
    restore_pinned,
    split_pinned,
)
from context_engine.tokens.messages import estimate_message


def _conversation() -> list:
    return [
        HumanMessage("Always answer in French.", id="h0"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "ls", "args": {}, "id": "c1"}, {"name": "ls", "args": {}, "id": "c2"}],
        ),
        ToolMessage("a.txt", tool_call_id="c1", id="t1"),
        ToolMessage("b.txt", tool_call_id="c2", id="t2"),
        AIMessage("Two files.", id="a2"),
        HumanMessage("Thanks", id="h3"),
    ]


def test_pinning_a_tool_result_keeps_its_call_and_the_calls_other_results():
    assert pinned_closure(_conversation(), ["t2"]) == {"a1", "t1", "t2"}
    assert [m.id for m in pin_group(_conversation(), "t1")] == ["a1", "t1", "t2"]


def test_pinning_a_tool_call_keeps_all_its_results():
    assert pinned_closure(_conversation(), ["a1"]) == {"a1", "t1", "t2"}


def test_pinning_a_plain_message_keeps_only_it_and_unknown_ids_are_kept_for_later():
    assert pinned_closure(_conversation(), ["h0", "later"]) == {"h0", "later"}
    assert pinned_closure(_conversation(), []) == frozenset()
    assert pin_group(_conversation(), "missing") == []


def test_split_keeps_pinned_messages_in_their_original_order():
    messages = _conversation()
    folded, kept = split_pinned(messages[:5], pinned_closure(messages, ["t1", "h0"]))
    assert [m.id for m in kept] == ["h0", "a1", "t1", "t2"]
    assert [m.id for m in folded] == ["a2"]
    assert split_pinned(messages, frozenset()) == (messages, [])


def test_pinned_tokens_and_room_under_the_cap():
    messages = _conversation()
    ids = pinned_closure(messages, ["h0"])
    assert pinned_tokens(messages, ids) == estimate_message(messages[0])
    assert pin_room(limit_tokens=100, used_tokens=30) == 70
    assert pin_room(limit_tokens=10, used_tokens=30) == 0


def test_restore_pinned_undoes_compaction_of_pinned_messages_only():
    original = _conversation()
    view = [
        m.model_copy(update={"content": "[receipt]"}) if isinstance(m, ToolMessage) else m for m in original
    ]
    restored = restore_pinned(original, view, pinned_closure(original, ["t1"]))
    assert restored[2] is original[2] and restored[3] is original[3]
    unpinned = restore_pinned(original, view, frozenset({"h0"}))
    assert unpinned[2].content == "[receipt]"
