"""Identifiers lie within one line, so the reference index can point at every one the fold reports.

The invariant: over generated conversations (multi-line texts, tool calls with arguments, tool results),
every identifier ``fold_identifiers`` reports for the folded messages is found on a line of the history
section rendered from them (read without our transcript frame), and that line holds it; the loss report
reads a kept message's tool-call arguments as the fold does.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.lines import split_lines
from context_engine.summary.fold_plan import fold_identifiers, message_text
from context_engine.summary.history import render_history_section
from context_engine.summary.identifiers import Haystack, identifiers_of
from context_engine.summary.loss import view_text
from context_engine.summary.reference_index import Source, build_reference_index
from context_engine.summary.rendering import transcript_line_text

IDENTIFIERS = [
    "https://example.com/a/b?x=1",
    "src/pkg/mod.py",
    "/usr/bin/chromium",
    "README.md",
    "ABC-1234",
    "123e4567-e89b-12d3-a456-426614174000",
    "9fceb02d",
    "bob@example.org",
    "300ms",
    "12.5 MB",
    "ZFA04Y",
]
WORDS = ["the", "result", "was", "see", "and", "then", "ok", '"user_id": "mia_li_3668"', "</message>"]
text = st.lists(st.sampled_from(IDENTIFIERS + WORDS), min_size=1, max_size=12).flatmap(
    lambda words: st.lists(st.sampled_from([" ", "\n", ", "]), min_size=len(words), max_size=len(words)).map(
        lambda seps: "".join(w + s for w, s in zip(words, seps, strict=True)).strip()
    )
)


@st.composite
def conversations(draw):
    messages = []
    for n in range(draw(st.integers(1, 5))):
        messages.append(HumanMessage(draw(text), id=f"h{n}"))
        calls = [
            {"id": f"c{n}_{k}", "name": "read_file", "args": {"path": draw(st.sampled_from(IDENTIFIERS))}}
            for k in range(draw(st.integers(0, 2)))
        ]
        messages.append(AIMessage(draw(text), id=f"a{n}", tool_calls=calls))
        messages += [ToolMessage(draw(text), tool_call_id=c["id"], id=f"t{c['id']}") for c in calls]
    return messages


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_every_folded_identifier_is_found_whole_on_a_line_of_the_history_section(messages):
    folded = fold_identifiers(messages)
    section = render_history_section(messages)
    index = build_reference_index(
        folded,
        summary="",
        kept=[],
        sources=[Source("history.md", section, 1, transcript=True)],
        budget=10**9,
        estimate=len,
    )
    assert index.omitted == 0 and {e.value for e in index.entries} == set(folded)
    lines = split_lines(section)
    for entry in index.entries:
        assert (entry.value, entry.kind) in Haystack([transcript_line_text(lines[entry.line - 1])])


@settings(max_examples=60, deadline=None)
@given(conversations())
def test_a_message_holds_the_identifiers_of_its_lines_and_the_loss_report_reads_calls_as_the_fold(messages):
    for message in messages:
        whole = message_text(message)
        assert identifiers_of([whole]) == identifiers_of(split_lines(whole))
        assert view_text(message) == whole  # no receipts here: the view reads what the fold read
