"""The engine's formats read back for people: the summary without its model-facing wrapper, and a
history file as sections of messages whose lines keep the numbers ``path:L<n>`` pointers use."""

from __future__ import annotations

from datetime import UTC, datetime

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.lines import split_lines
from context_engine.summary.history import build_summary_message, render_history_section
from context_engine.summary.reading import history_read, summary_body

SUMMARY = "## SESSION INTENT\nShip the **release**.\n\n## NEXT STEPS\nNone"


def test_the_summary_body_is_the_summary_alone():
    wrapped = build_summary_message(SUMMARY, file_path="outputs/conversation_history/s.md").content
    assert "<summary>" in wrapped and summary_body(wrapped) == SUMMARY
    assert summary_body(build_summary_message(SUMMARY, file_path=None).content) == SUMMARY
    assert summary_body("some other text") == "some other text"


def test_a_history_file_reads_as_a_conversation_with_its_line_numbers():
    messages = [
        HumanMessage("Find </message> in\nthe logs & say", id="h1"),
        AIMessage(
            "Searching.",
            id="a1",
            tool_calls=[{"id": "c1", "name": "query_kb", "args": {"query": "logs"}}],
        ),
        ToolMessage("line one\nline two", tool_call_id="c1", name="query_kb", id="t1"),
        AIMessage("Done.", id="a2"),
    ]
    at = datetime(2026, 12, 1, 12, 31, tzinfo=UTC)
    text = render_history_section(messages[:2], now=at) + render_history_section(messages[2:], now=at)
    file_lines = split_lines(text)

    first, second = history_read(text)
    assert first.title == at.isoformat() and file_lines[first.number - 1].startswith("## Summarized at")
    assert [m.role for m in first.messages] == ["human", "ai"]
    human, ai = first.messages
    assert [line.text for line in human.lines] == ["Find </message> in", "the logs & say"]
    assert [(line.call, line.text) for line in ai.lines] == [
        ("", "Searching."),
        ("query_kb", '{"query": "logs"}'),
    ]
    assert [m.role for m in second.messages] == ["tool", "ai"]
    assert [line.text for line in second.messages[0].lines] == ["line one", "line two"]
    # Every shown line is the file's line of that number (a pointer lands on it).
    for section in (first, second):
        for message in section.messages:
            for line in message.lines:
                assert line.text in file_lines[line.number - 1]
