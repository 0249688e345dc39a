"""The loss report's reach tiers (issue 24) over generated folds: the tiers partition the folded
identifiers, a saved file counts only when the view names it, and a view that names the history file
leaves nothing folded unreachable."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from context_engine.formats import (
    RECEIPT_HEADER,
    RECEIPT_PATH_PREFIX,
    RECEIPT_PREVIEW_HEADER,
    TOOL_RESULT_SAVED_KEY,
)
from context_engine.store import MemoryStore
from context_engine.summary.dropping import drop_span, plan_drop
from context_engine.summary.fold_plan import fold_identifiers, message_text
from context_engine.summary.identifiers import LOST_LIST_MAX, TIERS, LossReport
from context_engine.summary.loss import fold_loss_report, read_saved_texts, view_text

# Identifiers whose text never holds another's: tickets, and URLs whose "&" a history file must keep.
IDS = [f"TK{i}-{1000 + i}" for i in range(12)] + [f"https://example.com/item/{i}?a=1&b={i}" for i in range(4)]
SAVED = [f"outputs/large_tool_results/tool-{i:016x}.txt" for i in range(4)]
HISTORY = "outputs/conversation_history/session_abc.md"
PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

some_ids = st.lists(st.sampled_from(IDS), min_size=1, max_size=4, unique=True)
some_paths = st.lists(st.sampled_from(SAVED), max_size=2, unique=True)


def _text(ids: list[str], paths: list[str] = ()) -> str:
    return "note " + " , ".join([*ids, *paths]) + " end"


@st.composite
def folded_messages(draw) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for n in range(draw(st.integers(min_value=1, max_value=6))):
        kind, ids = draw(st.sampled_from(["human", "call", "tool"])), draw(some_ids)
        if kind == "human":
            out.append(HumanMessage(_text(ids), id=f"f{n}"))
        elif kind == "call":
            out.append(
                AIMessage("", id=f"f{n}", tool_calls=[{"name": "q", "args": {"q": ids}, "id": f"c{n}"}])
            )
        else:
            out.append(ToolMessage(_text(ids), tool_call_id=f"c{n}", id=f"f{n}"))
    return out


@st.composite
def kept_messages(draw) -> list[BaseMessage]:
    """What stays in view: text that may hold identifiers and name saved files, and ``read_file`` calls."""
    out: list[BaseMessage] = []
    for n in range(draw(st.integers(min_value=0, max_value=3))):
        if draw(st.booleans()):
            out.append(
                HumanMessage(_text(draw(st.lists(st.sampled_from(IDS), max_size=2)), draw(some_paths)))
            )
        else:
            path = draw(st.sampled_from(SAVED))
            out.append(
                AIMessage(
                    "", id=f"k{n}", tool_calls=[{"name": "read_file", "args": {"path": path}, "id": f"r{n}"}]
                )
            )
    return out


saved_files = st.dictionaries(st.sampled_from(SAVED), some_ids.map(_text), max_size=4)
# A summary may name saved files and the history file (a drop note does; a model's summary may).
summaries = st.builds(
    _text,
    st.lists(st.sampled_from(IDS), max_size=3),
    st.lists(st.sampled_from([*SAVED, HISTORY]), max_size=2),
)


def _expected_tier(value: str, *, summary: str, kept, saved, history_named: bool) -> str:
    """An oracle in plain substring terms (the generated identifiers need no case or spacing rules)."""
    view = [summary, *(view_text(m) for m in kept)]
    named = [text for path, text in saved.items() if any(path in v for v in view)]
    if value in summary:
        return "in_summary"
    if any(value in message_text(m) for m in kept):
        return "in_view"
    if any(value in text for text in named):
        return "one_read"
    return "two_reads" if history_named else "unreachable"


@PROPERTY
@given(folded=folded_messages(), kept=kept_messages(), saved=saved_files, summary=summaries)
def test_the_tiers_partition_the_folded_identifiers(folded, kept, saved, summary):
    found = fold_identifiers(folded)
    report = fold_loss_report(folded, summary=summary, kept=kept, saved_texts=saved)
    assert set(found) <= set(IDS) and found
    assert report.total == len(found) == sum(getattr(report, tier) for tier in TIERS)
    assert report.lost == report.two_reads + report.unreachable == sum(report.lost_kinds.values())
    assert len(report.lost_identifiers) == min(report.lost, LOST_LIST_MAX)
    assert len(set(report.lost_identifiers)) == len(report.lost_identifiers)
    assert set(report.lost_identifiers) <= set(found)
    assert LossReport.from_dict(report.as_dict()) == report  # the record reads back what was written


@PROPERTY
@given(folded=folded_messages(), kept=kept_messages(), saved=saved_files, summary=summaries)
def test_each_identifier_lands_in_the_nearest_tier_a_reader_can_reach(folded, kept, saved, summary):
    history_named = HISTORY in summary
    report = fold_loss_report(folded, summary=summary, kept=kept, saved_texts=saved)
    counts = dict.fromkeys(TIERS, 0)
    for value in fold_identifiers(folded):
        counts[
            _expected_tier(value, summary=summary, kept=kept, saved=saved, history_named=history_named)
        ] += 1
    assert {tier: getattr(report, tier) for tier in TIERS} == counts


@PROPERTY
@given(folded=folded_messages(), kept=kept_messages(), saved=saved_files, summary=summaries)
def test_a_saved_file_the_view_does_not_name_never_makes_an_identifier_one_read(folded, kept, saved, summary):
    view = [summary, *(view_text(m) for m in kept)]
    named = {path: text for path, text in saved.items() if any(path in v for v in view)}
    every = fold_loss_report(folded, summary=summary, kept=kept, saved_texts=saved)
    only_named = fold_loss_report(folded, summary=summary, kept=kept, saved_texts=named)
    assert every == only_named
    # Texts without their paths cannot be shown to be named: they never count.
    pathless = fold_loss_report(folded, summary=summary, kept=kept, saved_texts=list(saved.values()))
    assert pathless.one_read == 0
    assert pathless.in_summary == every.in_summary and pathless.in_view == every.in_view


@PROPERTY
@given(folded=folded_messages(), kept=kept_messages(), saved=saved_files, summary=summaries)
def test_when_the_summary_names_the_history_file_everything_folded_is_at_worst_two_reads(
    folded, kept, saved, summary
):
    named = fold_loss_report(
        folded, summary=f"{summary}\nFull history: {HISTORY}", kept=kept, saved_texts=saved
    )
    assert named.unreachable == 0
    told = fold_loss_report(folded, summary=summary, kept=kept, saved_texts=saved, history_named=True)
    assert told.unreachable == 0 and told.two_reads == named.two_reads
    unnamed = fold_loss_report(folded, summary=summary, kept=kept, saved_texts=saved, history_named=False)
    assert unnamed.two_reads == 0
    assert replace(unnamed, unreachable=0, lost_identifiers=(), lost_kinds={}) == replace(
        told, two_reads=0, lost_identifiers=(), lost_kinds={}
    )


def test_a_receipt_left_in_view_names_its_saved_file():
    store = MemoryStore()
    store.write_text(SAVED[0], "full output: TK1-1001 and TK2-1002")
    folded = [HumanMessage("we saw TK1-1001 and TK2-1002", id="h0")]
    receipt = ToolMessage(
        f"{RECEIPT_HEADER}\n{RECEIPT_PATH_PREFIX}{SAVED[0]}\n{RECEIPT_PREVIEW_HEADER}\nfull output",
        tool_call_id="c",
        additional_kwargs={TOOL_RESULT_SAVED_KEY: True},
    )
    saved = read_saved_texts(store, [SAVED[0], SAVED[1]])  # the second is missing: it holds nothing
    assert list(saved) == [SAVED[0]]
    assert fold_loss_report(folded, summary="", kept=[receipt], saved_texts=saved).one_read == 2
    assert fold_loss_report(folded, summary="", kept=[], saved_texts=saved).one_read == 0


def test_a_drop_note_names_the_history_file_so_nothing_dropped_is_unreachable():
    view = [
        HumanMessage("ticket TK3-1003, see https://example.com/item/1?a=1&b=1", id="h0"),
        AIMessage("noted TK4-1004", id="a0"),
        HumanMessage("and now something else", id="h1"),
        AIMessage("done", id="a1"),
    ]
    store = MemoryStore()
    steps = drop_span(
        plan_drop(
            view,
            cutoff=2,
            pinned_ids=frozenset(),
            state={},
            previous=None,
            lead=0,
            now=datetime.now(UTC),
        ),
        store=store,
    )
    try:
        effect = next(steps)
        while True:
            effect = steps.send(effect.fn())
    except StopIteration as done:
        plan, loss = done.value
    assert plan.file_path in str(plan.note.content)
    assert loss.total == 3 and loss.two_reads == 3 and loss.unreachable == 0
