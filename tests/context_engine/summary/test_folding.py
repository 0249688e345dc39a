"""Folding with pins, on the pure engine: what a summary folds, what stays verbatim, the global cutoff
across successive summaries, and the effective messages an event with pins gives."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.compaction.receipts import render_receipt
from context_engine.formats import TOOL_RESULT_SAVED_KEY
from context_engine.state import PINNED_IDS_KEY
from context_engine.summary.fold_plan import fold_identifiers, fold_split, receipt_paths, view_lead
from context_engine.summary.history import (
    build_summarization_event,
    build_summary_message,
    effective_messages,
)
from context_engine.summary.pins import pinned_closure

INSTRUCTION = "Never touch the production database; ticket OPS-4711."


def _turn(i: int) -> list:
    return [
        HumanMessage(f"step {i}: look at src/app_{i}.py", id=f"h{i}"),
        AIMessage(
            "",
            id=f"a{i}",
            tool_calls=[{"name": "read_file", "args": {"path": f"src/app_{i}.py"}, "id": f"c{i}"}],
        ),
        ToolMessage(f"contents of app {i}", tool_call_id=f"c{i}", id=f"t{i}"),
        AIMessage(f"done {i}", id=f"r{i}"),
    ]


def test_pinned_messages_leave_the_folded_span_and_stay_in_order():
    view = [HumanMessage(INSTRUCTION, id="pin"), *[m for i in range(4) for m in _turn(i)]]
    pinned = pinned_closure(view, ["pin", "t1"])
    split = fold_split(view, pinned_ids=pinned, keep_messages=4, max_tail_tokens=None)
    assert split.cutoff == len(view) - 4
    assert [m.id for m in split.kept_pinned] == ["pin", "a1", "t1"]
    assert "pin" not in {m.id for m in split.folded} and "a1" not in {m.id for m in split.folded}
    assert [m.id for m in split.kept] == ["pin", "a1", "t1", "h3", "a3", "t3", "r3"]


def test_nothing_is_folded_when_only_pinned_messages_and_the_summary_precede_the_tail():
    summary = build_summary_message("s", file_path="f.md")
    view = [summary, HumanMessage(INSTRUCTION, id="pin"), *_turn(9)]
    split = fold_split(view, pinned_ids={"pin"}, keep_messages=4, max_tail_tokens=None, lead=2)
    assert split.cutoff == 0 and split.folded == [] and split.kept == view


def test_a_cut_inside_the_kept_pins_moves_to_their_end():
    summary = build_summary_message("s", file_path="f.md")
    view = [summary, HumanMessage(INSTRUCTION, id="pin"), HumanMessage("unpinned now", id="old"), *_turn(5)]
    split = fold_split(view, pinned_ids={"pin"}, keep_messages=len(view) - 2, max_tail_tokens=None, lead=3)
    assert split.cutoff == 3
    assert [m.id for m in split.kept_pinned] == ["pin"] and split.folded[-1].id == "old"


def test_a_pinned_instruction_survives_five_successive_summaries_verbatim_right_after_the_summary():
    messages = [HumanMessage(INSTRUCTION, id="pin"), *_turn(0)]
    event = None
    for round_ in range(1, 6):
        messages += [m for i in range(round_ * 10, round_ * 10 + 3) for m in _turn(i)]
        effective = effective_messages(messages, event)
        lead = view_lead(messages, effective, event["cutoff_index"] if event else None)
        pinned = pinned_closure(effective, ["pin"])
        split = fold_split(effective, pinned_ids=pinned, keep_messages=4, max_tail_tokens=None, lead=lead)
        assert split.cutoff > 0
        event = build_summarization_event(
            previous=event,
            local_cutoff=split.cutoff,
            summary_message=build_summary_message(f"summary {round_}", file_path="f.md"),
            file_path="f.md",
            lead=lead,
            pinned_ids=[m.id for m in split.kept_pinned],
        )
        visible = effective_messages(messages, event)
        assert visible[1].content == INSTRUCTION and visible[1].id == "pin"
        assert [m.id for m in visible[2:]] == [m.id for m in messages[-4:]]  # the tail, nothing older
        assert event[PINNED_IDS_KEY] == ["pin"]


def test_identifiers_come_from_content_and_tool_arguments_but_not_earlier_summaries():
    folded = [build_summary_message("old PROJ-1", file_path="f.md"), *_turn(3)]
    found = fold_identifiers(folded)
    assert "src/app_3.py" in found and "PROJ-1" not in found


def test_receipt_paths_are_read_from_saved_tool_results():
    receipt = render_receipt(
        tool_name="shell",
        tokens=10,
        sha256="0" * 64,
        path="outputs/large_tool_results/shell-0.txt",
        preview="",
        omitted_chars=0,
    )
    saved = ToolMessage(receipt, tool_call_id="c", additional_kwargs={TOOL_RESULT_SAVED_KEY: True})
    assert receipt_paths([saved, ToolMessage("Full output path: x", tool_call_id="d")]) == [
        "outputs/large_tool_results/shell-0.txt"
    ]
