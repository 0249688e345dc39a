"""The reference index after a summary (issue 25), as properties over generated folds: it never exceeds
its budget; every pointer names a line of the history file that holds its identifier, and still does
after more sections are appended; it lists only identifiers the summary and the kept messages lack; and
through ``summarize_span`` it travels in the summary message, counts in the loss report and never makes
the compression bigger."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from context_engine.config import CompressionConfig
from context_engine.formats import (
    RECEIPT_HEADER,
    RECEIPT_PATH_PREFIX,
    RECEIPT_PREVIEW_HEADER,
    REFERENCE_INDEX_HEADER,
    TOOL_RESULT_SAVED_KEY,
)
from context_engine.lines import parse_pointer, pointer, split_lines
from context_engine.steps import run_sync
from context_engine.store import MemoryStore
from context_engine.summary.call import Span, summarize_span
from context_engine.summary.fold_plan import fold_identifiers, message_text
from context_engine.summary.history import history_next_line, history_path, render_history_section
from context_engine.summary.identifiers import Haystack, identifiers_of
from context_engine.summary.reference_index import Source, build_reference_index
from context_engine.tokens.messages import DEFAULT_PROFILE, estimate_message, estimate_text, messages_tokens
from tests.context_engine.fakes import ScriptedChatModel

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
HISTORY = history_path("session_prop")

IDS = (
    [f"PROJ-{100 + i}" for i in range(10)]
    + [f"src/module_{i}/handler.py" for i in range(8)]
    + [f"https://example.com/docs/{i}?page=2&q=x" for i in range(6)]
    + [f"{i + 2} MB" for i in range(4)]
    + [f"{'a1b2c3d4' * 5}{i:08x}" for i in range(4)]
)
some_ids = st.lists(st.sampled_from(IDS), min_size=1, max_size=5)
# Text around identifiers, with the line breaks a verbatim text may hold (``\r``, ``\u2028``: never lines).
filler = st.sampled_from(["see", "then\nnext", "ok\r\nalso", "x\u2028y", "中文 内容", "  "])


@st.composite
def folds(draw) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for n in range(draw(st.integers(min_value=1, max_value=8))):
        ids = draw(some_ids)
        text = " ".join(f"{draw(filler)} {value}" for value in ids)
        kind = draw(st.sampled_from(["human", "call", "tool"]))
        if kind == "human":
            out.append(HumanMessage(text, id=f"h{n}"))
        elif kind == "call":
            out.append(
                AIMessage("", id=f"a{n}", tool_calls=[{"name": "q", "args": {"q": text}, "id": f"c{n}"}])
            )
        else:
            out.append(ToolMessage(text, tool_call_id=f"c{n}", id=f"t{n}"))
    return out


def _index(folded, *, summary, kept=(), existing="", budget=400):
    section = render_history_section(folded, now=NOW)
    first = history_next_line(_store(existing), HISTORY)
    index = build_reference_index(
        fold_identifiers(folded),
        summary=summary,
        kept=[message_text(m) for m in kept],
        sources=[Source(HISTORY, section, first)],
        budget=budget,
        estimate=partial(estimate_text, profile=DEFAULT_PROFILE),
    )
    return index, existing + section


def _store(existing: str) -> MemoryStore:
    store = MemoryStore()
    if existing:
        store.files[HISTORY] = existing
    return store


def _resolves(file_text: str, value: str, line: int) -> bool:
    row = split_lines(file_text)[line - 1]
    return value in row or value.lower() in row.lower()


@PROPERTY
@given(
    folded=folds(),
    summary_ids=st.lists(st.sampled_from(IDS), max_size=6),
    budget=st.integers(min_value=0, max_value=600),
)
def test_the_index_never_exceeds_its_budget(folded, summary_ids, budget):
    index, _ = _index(folded, summary=" ".join(summary_ids), budget=budget)
    assert index.tokens == estimate_text(index.text, DEFAULT_PROFILE)
    assert index.tokens <= budget
    if budget == 0:
        assert index.text == ""


@PROPERTY
@given(
    folded=folds(),
    earlier=st.lists(st.sampled_from(["old line", "", "with\rcarriage", "a\u2028b", "x" * 50]), max_size=40),
    later=folds(),
)
def test_every_pointer_names_a_line_holding_its_identifier_even_after_more_sections(folded, earlier, later):
    existing = "\n".join(earlier) + ("\n" if earlier and earlier[-1] else "")
    index, file_text = _index(folded, summary="", existing=existing, budget=5000)
    assert index.entries or not fold_identifiers(folded)
    for entry in index.entries:
        assert _resolves(file_text, entry.value, entry.line), (entry, split_lines(file_text)[entry.line - 1])
    # Appending is all that ever happens to a history file: earlier pointers stay true.
    grown = file_text + render_history_section(later, now=NOW)
    for entry in index.entries:
        assert _resolves(grown, entry.value, entry.line)
    for start, end in ((r.start, r.end) for r in index.ranges):
        assert 1 <= start <= end <= len(split_lines(file_text))


@PROPERTY
@given(
    folded=folds(),
    summary_ids=st.lists(st.sampled_from(IDS), max_size=8),
    kept_ids=st.lists(st.sampled_from(IDS), max_size=8),
)
def test_the_index_lists_only_what_the_summary_and_kept_messages_lack(folded, summary_ids, kept_ids):
    summary = "summary: " + ", ".join(summary_ids)
    kept = [HumanMessage("still here: " + ", ".join(kept_ids), id="k1")]
    index, _ = _index(folded, summary=summary, kept=kept, budget=5000)
    in_summary, in_kept = Haystack([summary]), Haystack([message_text(m) for m in kept])
    identifiers = fold_identifiers(folded)
    missing = {v for v, k in identifiers.items() if (v, k) not in in_summary and (v, k) not in in_kept}
    listed = {e.value for e in index.entries}
    assert listed <= missing
    assert len(listed) + index.omitted == len(missing)


def test_the_index_says_how_many_it_left_out_and_in_which_lines():
    folded = [HumanMessage(f"ticket PROJ-{1000 + i} is open", id=f"m{i}") for i in range(60)]
    index, file_text = _index(folded, summary="", budget=200)
    assert 0 < len(index.entries) < 60 and index.omitted == 60 - len(index.entries)
    assert f"{index.omitted} more not listed here" in index.text and f"in {HISTORY} lines" in index.text
    assert index.ranges and sum(r.count for r in index.ranges) == index.omitted
    for r, text in zip(index.ranges, index.range_texts, strict=True):
        assert text == "\n".join(split_lines(file_text)[r.start - 1 : r.end])


def test_most_used_identifiers_come_first():
    folded = [
        HumanMessage("once PROJ-1 here", id="a"),
        HumanMessage("PROJ-2 and again PROJ-2", id="b"),
        HumanMessage("PROJ-2 thrice, PROJ-3 late", id="c"),
    ]
    index, _ = _index(folded, summary="", budget=5000)
    assert [e.value for e in index.entries] == ["PROJ-2", "PROJ-3", "PROJ-1"]


def test_pointers_parse_back():
    assert parse_pointer(pointer(HISTORY, 412)) == (HISTORY, 412)
    assert parse_pointer(HISTORY) == (HISTORY, None)
    assert parse_pointer("notes:L0") == ("notes:L0", None)


# --- through summarize_span -------------------------------------------------------------------------


def _summarize(folded, *, store, config, summary="## SESSION INTENT\nwork on the project"):
    model = ScriptedChatModel(summaries=[summary])
    return run_sync(
        summarize_span(
            Span(
                folded,
                state={"_summarization_session_id": "session_prop"},
                previous=None,
                local_cutoff=len(folded),
                budget=10_000,
                now=NOW,
            ),
            config=config,
            store=store,
            profile=DEFAULT_PROFILE,
        ),
        handler=lambda request: None,
        summary_model=model,
    )


@PROPERTY
@given(folded=folds(), percent=st.integers(min_value=0, max_value=30), earlier=st.integers(0, 30))
def test_summarize_span_appends_the_index_to_the_summary_message_and_counts_it(folded, percent, earlier):
    store = _store("".join(f"line {n}\n" for n in range(earlier)))
    config = CompressionConfig(trigger_tokens=4000, index_percent=percent)
    try:
        outcome = _summarize(folded, store=store, config=config)
    except Exception as exc:  # a tiny fold cannot be summarized smaller: nothing was written then
        assert type(exc).__name__ == "SummaryNotSmaller"
        assert store.files.get(HISTORY, "").count("\n") == earlier
        return
    index, message = outcome.index, outcome.event["summary_message"]
    assert index.tokens <= config.index_budget
    assert estimate_message(message, DEFAULT_PROFILE) < messages_tokens(folded, DEFAULT_PROFILE)
    if index.text:
        assert message.content.endswith(index.text)
        assert outcome.event["reference_index"]["entries"] == [
            {"value": e.value, "kind": e.kind, "path": HISTORY, "line": e.line} for e in index.entries
        ]
        assert index.text.startswith(REFERENCE_INDEX_HEADER)
        assert not index.entries or index.text.startswith(f"{REFERENCE_INDEX_HEADER}\n{HISTORY}:\n")
    for entry in index.entries:
        assert _resolves(store.files[HISTORY], entry.value, entry.line)
    # The loss report counts the index: what it lists is in view, never lost.
    lost = set(outcome.loss.lost_identifiers)
    assert not lost & {e.value for e in index.entries}
    assert outcome.loss.total == len(fold_identifiers(folded))


def test_without_the_index_the_same_fold_loses_what_the_index_carries():
    folded = [
        HumanMessage(f"see src/pkg_{i}/mod.py and PROJ-{i + 10} for item {i}", id=f"m{i}") for i in range(20)
    ]
    with_index = _summarize(folded, store=MemoryStore(), config=CompressionConfig(trigger_tokens=8000))
    without = _summarize(
        folded, store=MemoryStore(), config=CompressionConfig(trigger_tokens=8000, index_percent=0)
    )
    assert without.index.text == "" and "reference_index" not in without.event
    assert with_index.loss.in_view == len(with_index.index.entries) > 0
    assert with_index.loss.lost < without.loss.lost


def test_identifiers_of_a_folded_receipts_saved_result_point_into_the_saved_file():
    saved = "outputs/large_tool_results/web_search-00000000000000aa.txt"
    store = MemoryStore()
    store.files[saved] = "".join(f"result {n}: https://docs.example.org/page/{n}?v=2\n" for n in range(1, 40))
    receipt = ToolMessage(
        "\n".join(
            [
                RECEIPT_HEADER,
                "Tool: web_search",
                "Approx tokens: 900",
                f"{RECEIPT_PATH_PREFIX}{saved}",
                "",
                RECEIPT_PREVIEW_HEADER,
                "result 1: https://docs.example.org/page/1?v=2",
            ]
        ),
        tool_call_id="c1",
        id="t1",
        additional_kwargs={TOOL_RESULT_SAVED_KEY: True},
    )
    call = AIMessage("", id="a1", tool_calls=[{"name": "web_search", "args": {"query": "docs"}, "id": "c1"}])
    folded = [HumanMessage("find the docs pages " + "please " * 1500, id="h1"), call, receipt]
    outcome = _summarize(folded, store=store, config=CompressionConfig(trigger_tokens=8000))
    in_saved = [e for e in outcome.index.entries if e.path == saved]
    assert in_saved, outcome.index.text
    lines = split_lines(store.files[saved])
    for entry in in_saved:
        assert entry.value in lines[entry.line - 1]
    assert f"\n{saved}:\n" in outcome.index.text


@PROPERTY
@given(
    folded=folds(),
    saved_lines=st.lists(st.lists(st.sampled_from(IDS), max_size=3).map(" ; ".join), min_size=1, max_size=30),
    summary_ids=st.lists(st.sampled_from(IDS), max_size=6),
    budget=st.integers(min_value=0, max_value=900),
)
def test_pointers_into_saved_results_resolve_and_the_budget_holds(folded, saved_lines, summary_ids, budget):
    saved_path = "outputs/large_tool_results/web_search-00000000000000bb.txt"
    saved = "\n".join(saved_lines) + "\n"
    section = render_history_section(folded, now=NOW)
    texts = {HISTORY: section, saved_path: saved}
    summary = " ".join(summary_ids)
    identifiers = {**identifiers_of([saved]), **fold_identifiers(folded)}
    index = build_reference_index(
        identifiers,
        summary=summary,
        kept=[],
        sources=[Source(HISTORY, section), Source(saved_path, saved)],
        budget=budget,
        estimate=partial(estimate_text, profile=DEFAULT_PROFILE),
    )
    assert index.tokens <= budget
    in_summary = Haystack([summary])
    for entry in index.entries:
        assert entry.value in split_lines(texts[entry.path])[entry.line - 1]
        assert (entry.value, entry.kind) not in in_summary
    for r, text in zip(index.ranges, index.range_texts, strict=True):
        assert text == "\n".join(split_lines(texts[r.path])[r.start - 1 : r.end])


def test_a_line_repeated_across_sources_points_into_the_first_that_holds_it():
    repeated = "deploy token ABC-4242 rotated"
    sources = [
        Source("history.md", f"intro\n{repeated}\nok", 10),
        Source("saved/a.txt", f"{repeated}\n{repeated}"),
    ]
    index = build_reference_index(
        {"ABC-4242": "ticket"},
        summary="",
        kept=[],
        sources=sources,
        budget=5000,
        estimate=partial(estimate_text, profile=DEFAULT_PROFILE),
    )
    assert [(e.value, e.path, e.line) for e in index.entries] == [("ABC-4242", "history.md", 11)]


# --- carried forward: a second summary keeps the first one's index (issue 37 item 5) -------------------


def _second_summary(first_folded, second_folded, *, store, config, summary):
    """Two summaries in a row: the second folds the first's message and ``second_folded``."""
    first = _summarize(first_folded, store=store, config=config)
    model = ScriptedChatModel(summaries=[summary])
    second = run_sync(
        summarize_span(
            Span(
                [first.event["summary_message"], *second_folded],
                state={"_summarization_session_id": "session_prop"},
                previous=first.event,
                local_cutoff=1 + len(second_folded),
                budget=10_000,
                now=NOW,
            ),
            config=config,
            store=store,
            profile=DEFAULT_PROFILE,
        ),
        handler=lambda request: None,
        summary_model=model,
    )
    return first, second


def test_a_second_summary_carries_the_first_ones_index_forward():
    first_folded = [
        HumanMessage(f"see src/pkg_{i}/mod.py and PROJ-{i + 10} for item {i}", id=f"m{i}") for i in range(20)
    ]
    second_folded = [HumanMessage(f"now look at ticket OPS-{500 + i} please", id=f"n{i}") for i in range(20)]
    store = MemoryStore()
    first, second = _second_summary(
        first_folded,
        second_folded,
        store=store,
        config=CompressionConfig(trigger_tokens=8000),
        summary="## SESSION INTENT\nwork on the tickets",
    )
    earlier = {(e.value, e.line) for e in first.index.entries}
    assert earlier
    listed = {(e.value, e.line) for e in second.index.entries}
    assert earlier <= listed  # the first index's entries, with their pointers, are still listed
    assert any(e.value.startswith("OPS-") for e in second.index.entries)  # beside the second fold's own
    for entry in second.index.entries:  # every pointer still opens on its identifier
        assert _resolves(store.files[HISTORY], entry.value, entry.line)
    assert second.index.tokens <= CompressionConfig(trigger_tokens=8000).index_budget


@PROPERTY
@given(
    first_ids=st.lists(st.sampled_from(IDS), min_size=1, max_size=12),
    second=folds(),
    summary_ids=st.lists(st.sampled_from(IDS), max_size=6),
    budget=st.integers(min_value=0, max_value=600),
)
def test_carried_entries_stay_within_the_budget_and_only_while_lacked(first_ids, second, summary_ids, budget):
    first_folded = [HumanMessage(f"item {n}: {value}", id=f"f{n}") for n, value in enumerate(first_ids)]
    earlier, existing = _index(first_folded, summary="", budget=10_000)
    summary = " ".join(summary_ids)
    section = render_history_section(second, now=NOW)
    index = build_reference_index(
        fold_identifiers(second),
        summary=summary,
        kept=[],
        sources=[Source(HISTORY, section, history_next_line(_store(existing), HISTORY))],
        budget=budget,
        estimate=partial(estimate_text, profile=DEFAULT_PROFILE),
        carried=earlier.entries,
    )
    assert index.tokens <= budget
    file_text = existing + section
    in_summary = Haystack([summary])
    for entry in index.entries:
        assert _resolves(file_text, entry.value, entry.line)
        assert (entry.value, entry.kind) not in in_summary
