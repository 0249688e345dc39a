"""Issue 39 item 9: "the N most recent messages, which are always kept" counts what the agent keeps
(its ``keep_messages``), not the summary sent before them."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from context_engine import outcomes
from context_engine.formats import SUMMARY_MARKER_KEY, SUMMARY_MARKER_VALUE
from context_engine.tokens.messages import DEFAULT_PROFILE


def _kept(count: int) -> list:
    return [(HumanMessage if i % 2 == 0 else AIMessage)("word " * 400, id=f"m{i}") for i in range(count)]


def test_the_kept_messages_are_counted_without_the_summary_before_them():
    summary = HumanMessage("summary " * 50, additional_kwargs={SUMMARY_MARKER_KEY: SUMMARY_MARKER_VALUE})
    reason = outcomes.unreachable_reason(
        [summary, *_kept(4)], overhead_tokens=100, trigger_tokens=1000, profile=DEFAULT_PROFILE
    )
    assert (reason["code"], reason["messages"]) == ("kept_messages_too_large", 4)


def test_without_a_summary_every_kept_message_counts():
    reason = outcomes.unreachable_reason(
        _kept(4), overhead_tokens=100, trigger_tokens=1000, profile=DEFAULT_PROFILE
    )
    assert (reason["code"], reason["messages"]) == ("kept_messages_too_large", 4)
