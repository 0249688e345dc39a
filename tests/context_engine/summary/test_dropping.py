"""Dropping the oldest unpinned messages to fit the window, when the spend guard holds a summary back."""

from __future__ import annotations

from datetime import UTC, datetime

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.steps import Blocking
from context_engine.store import MemoryStore
from context_engine.summary.cutoff import is_summary_message
from context_engine.summary.dropping import build_drop_message, drop_cutoff, drop_span, plan_drop
from context_engine.summary.history import build_summary_message
from context_engine.tokens.messages import estimate_message


def _turns(n: int, size: int = 200) -> list:
    out: list = []
    for i in range(n):
        out += [
            HumanMessage(f"question {i} " + "word " * size, id=f"h{i}"),
            AIMessage("", id=f"a{i}", tool_calls=[{"name": "ls", "args": {}, "id": f"c{i}"}]),
            ToolMessage("file " * size, tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    return out


def _fits(view, cutoff, pinned, limit) -> bool:
    kept = [m for m in view[:cutoff] if m.id in pinned] + list(view[cutoff:])
    return sum(estimate_message(m) for m in kept) <= limit


def test_drops_just_enough_of_the_oldest_messages_and_never_splits_a_pair():
    view = _turns(6)
    total = sum(estimate_message(m) for m in view)
    cutoff = drop_cutoff(view, pinned_ids=frozenset(), max_tokens=total // 2)
    assert 0 < cutoff < len(view)
    assert not isinstance(view[cutoff], ToolMessage)
    assert _fits(view, cutoff, frozenset(), total // 2)
    assert not _fits(view, cutoff - 3, frozenset(), total // 2 - 200)  # not far more than needed


def test_pinned_messages_are_never_dropped_and_count_against_the_room():
    view = _turns(6)
    total = sum(estimate_message(m) for m in view)
    plain = drop_cutoff(view, pinned_ids=frozenset(), max_tokens=total // 2)
    pinned = frozenset({"h0"})
    with_pin = drop_cutoff(view, pinned_ids=pinned, max_tokens=total // 2)
    assert with_pin >= plain  # the pin takes room, so at least as much else goes


def test_nothing_to_drop_when_the_view_fits_or_holds_one_message():
    view = _turns(2)
    assert drop_cutoff(view, pinned_ids=frozenset(), max_tokens=10**6) == 0
    assert drop_cutoff(view[:1], pinned_ids=frozenset(), max_tokens=1) == 0


def test_an_earlier_summary_stays_and_the_note_carries_it():
    summary = build_summary_message("We fixed ABC-1234.", file_path="outputs/conversation_history/s.md")
    view = [summary, *_turns(4)]
    cutoff = drop_cutoff(view, pinned_ids=frozenset(), max_tokens=600)
    assert cutoff > 1
    note = build_drop_message(
        dropped=cutoff - 1, file_path="outputs/conversation_history/s.md", previous_summary=summary
    )
    assert is_summary_message(note)
    assert "We fixed ABC-1234." in note.content and f"[{cutoff - 1} earlier messages" in note.content
    fresh = build_drop_message(dropped=3, file_path="x.md", previous_summary=None)
    assert fresh.content.startswith("[3 earlier messages were removed")


def test_a_drop_plan_keeps_pins_after_the_note_and_writes_everything_it_drops_to_history():
    view = _turns(6)
    pinned = frozenset({"h1"})
    cutoff = drop_cutoff(view, pinned_ids=pinned, max_tokens=sum(estimate_message(m) for m in view) // 2)
    plan = plan_drop(
        view,
        cutoff=cutoff,
        pinned_ids=pinned,
        state={},
        previous=None,
        lead=0,
        now=datetime(2026, 12, 1, tzinfo=UTC),
    )
    assert [m.id for m in plan.kept_pinned] == ["h1"]
    assert plan.final == [plan.note, *plan.kept_pinned, *view[cutoff:]]
    assert is_summary_message(plan.note) and plan.file_path in str(plan.note.content)
    assert {m.id for m in plan.dropped} == {m.id for m in view[:cutoff]} - pinned
    assert all(str(m.content)[:40] in plan.section for m in plan.dropped if m.content)
    assert plan.event["cutoff_index"] == cutoff and plan.event["pinned_message_ids"] == ["h1"]


def test_a_drop_writes_the_history_section_before_anything_is_sent():
    view, store = _turns(4), MemoryStore()
    steps = drop_span(
        plan_drop(
            view,
            cutoff=6,
            pinned_ids=frozenset(),
            state={},
            previous=None,
            lead=0,
            now=datetime.now(UTC),
        ),
        store=store,
    )
    effects = []
    try:
        effect = next(steps)
        while True:
            effects.append(effect)
            effect = steps.send(effect.fn())
    except StopIteration as done:
        plan, loss = done.value
    assert isinstance(effects[0], Blocking) and store.read_text(plan.file_path).count("question 0") == 1
    assert loss.total >= 0 and len(plan.dropped) == 6
