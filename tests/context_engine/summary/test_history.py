"""History sections, the summary message, global cutoffs, effective messages, the summary prompt."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.errors import EmptySummaryError, SummaryError
from context_engine.formats import DEFAULT_SUMMARY_PROMPT
from context_engine.summary.cutoff import find_cutoff
from context_engine.summary.history import (
    build_summarization_event,
    build_summary_message,
    effective_messages,
    format_summary_prompt,
    global_cutoff,
    history_path,
    new_session_id,
    render_history_section,
    summary_text,
    validate_summary_prompt,
)
from context_engine.tokens.messages import estimate_text
from tests.context_engine.chats import SUMMARY


def _messages(n: int) -> list:
    return [
        HumanMessage(f"m{i}", id=f"id{i}") if i % 2 == 0 else AIMessage(f"m{i}", id=f"id{i}")
        for i in range(n)
    ]


def test_history_section_leaves_out_earlier_summaries():
    old = build_summary_message("old summary", file_path="f.md")
    section = render_history_section(
        [old, HumanMessage("hello"), AIMessage("hi")], now=datetime(2026, 1, 1, tzinfo=UTC)
    )
    assert section.startswith("## Summarized at 2026-01-01T00:00:00+00:00\n\n")
    assert "old summary" not in section
    assert '<message type="human">hello</message>\n<message type="ai">hi</message>' in section
    assert section.endswith("\n\n")


def test_history_path_is_under_conversation_history_and_rejects_unsafe_ids():
    sid = new_session_id()
    assert sid.startswith("session_") and len(sid) == len("session_") + 39 and sid[8:].isdigit()
    assert history_path(sid) == f"outputs/conversation_history/{sid}.md"
    for bad in ("../x", "", "a/b", "a.md", "x\x00"):
        with pytest.raises(ValueError):
            history_path(bad)


def test_first_summary_event_uses_the_local_cutoff():
    message = build_summary_message("s", file_path="p")
    event = build_summarization_event(previous=None, local_cutoff=3, summary_message=message, file_path="p")
    assert event == {"cutoff_index": 3, "summary_message": message, "file_path": "p"}


def test_second_summary_stores_the_global_cutoff():
    state = _messages(20)
    first = build_summarization_event(
        previous=None,
        local_cutoff=8,
        summary_message=build_summary_message("one", file_path="p"),
        file_path="p",
    )
    view = effective_messages(state, first)  # [summary, *state[8:]]
    local = find_cutoff(view, keep_messages=4)
    assert local == len(view) - 4
    second = build_summarization_event(
        previous=first,
        local_cutoff=local,
        summary_message=build_summary_message("two", file_path="p"),
        file_path="p",
    )
    assert second["cutoff_index"] == 8 + local - 1 == 16
    # the kept tail seen through the effective view equals state[cutoff:]
    assert view[local:] == state[second["cutoff_index"] :]
    assert effective_messages(state, second)[1:] == state[16:]
    assert global_cutoff(None, 5) == 5 and global_cutoff({"cutoff_index": 5}, 1) == 5


def test_effective_messages_rebuild_from_the_original_state_messages():
    big = ToolMessage("raw " * 1000, tool_call_id="c", id="t")
    state = [*_messages(4), big, HumanMessage("next", id="n")]
    summary = build_summary_message("s", file_path="p")
    view = effective_messages(state, {"cutoff_index": 4, "summary_message": summary, "file_path": "p"})
    assert view == [summary, big, state[-1]] and view[1] is big
    assert effective_messages(state, None) == state and effective_messages(state, None) is not state


def test_malformed_events_hide_nothing_and_a_cutoff_past_the_end_keeps_the_summary():
    state = _messages(3)
    assert effective_messages(state, {"cutoff_index": "x", "summary_message": None}) == state
    summary = build_summary_message("s", file_path=None)
    assert effective_messages(state, {"cutoff_index": 10, "summary_message": summary}) == [summary]
    assert summary.content == "Here is a summary of the conversation to date:\n\ns"


def test_summary_prompt_contains_the_messages_as_xml():
    prompt = format_summary_prompt([HumanMessage("find flights"), AIMessage("ok")])
    assert prompt.startswith(DEFAULT_SUMMARY_PROMPT.split("{messages}")[0])
    assert '<message type="human">find flights</message>' in prompt
    assert prompt.endswith("Output only the summary, with no extra commentary.")


def test_summary_prompt_keeps_the_newest_messages_within_the_budget():
    messages = [HumanMessage(f"message number {i} " + "filler " * 200) for i in range(30)]
    prompt = format_summary_prompt(messages, prompt="S {messages} E", max_tokens=2000)
    assert estimate_text(prompt) <= 2000
    assert "message number 29 " in prompt and "message number 0 " not in prompt


def test_summary_prompt_keeps_an_earlier_summary_first():
    old = build_summary_message("OLD FACTS", file_path="p")
    messages = [old, *(HumanMessage(f"n{i} " + "filler " * 300) for i in range(20))]
    prompt = format_summary_prompt(messages, prompt="{messages}", max_tokens=1500)
    assert "OLD FACTS" in prompt and "n19 " in prompt and "n0 " not in prompt
    assert estimate_text(prompt) <= 1500


def test_summary_prompt_previews_a_single_message_too_large_for_the_budget():
    prompt = format_summary_prompt([HumanMessage("BEGIN " + "huge " * 20_000 + " END")], max_tokens=1200)
    assert estimate_text(prompt) <= 1200 and "[HEAD]" in prompt and "BEGIN" in prompt


def test_summary_prompt_errors_are_explicit():
    with pytest.raises(SummaryError):
        format_summary_prompt([])
    with pytest.raises(SummaryError):
        format_summary_prompt([HumanMessage("x " * 100)], max_tokens=10)


def test_custom_summary_prompt_must_contain_messages_and_no_other_placeholder():
    validate_summary_prompt("Summarize: {messages}")
    validate_summary_prompt('JSON like {{"a": 1}} then {messages}')
    for bad in (
        "no placeholder",
        "{messages} and {other}",
        "{messages} {",
        "{messages:>99999999999}",
        "{messages.__class__}",
        "{messages!r}",
        "{messages} {messages}",
    ):
        with pytest.raises(ValueError):
            validate_summary_prompt(bad)


def test_custom_prompt_with_stray_braces_is_filled_literally():
    assert format_summary_prompt([HumanMessage("hi")], prompt='{"x": 1} {messages}') == (
        '{"x": 1} <message type="human">hi</message>'
    )


def test_a_stored_prompt_with_a_format_spec_is_filled_literally_never_formatted():
    # Formatted, "{messages:>99999999999}" would allocate ~100 GB (a MemoryError, a 500 in the admin).
    prompt = format_summary_prompt([HumanMessage("hi")], prompt="S: {messages:>99999999999} {messages}")
    assert prompt == 'S: {messages:>99999999999} <message type="human">hi</message>'


def test_empty_summaries_are_rejected_and_text_is_stripped():
    assert summary_text(AIMessage(f"  {SUMMARY} \n")) == SUMMARY
    assert summary_text(AIMessage([{"type": "text", "text": SUMMARY}])) == SUMMARY
    for empty in ("", "   \n", AIMessage(""), AIMessage([])):
        with pytest.raises(EmptySummaryError):
            summary_text(empty)
