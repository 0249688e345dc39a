"""The extractive summary (issue 37 item 1): the folded messages' own sentences and identifiers under the
five headings, within the summary budget, the same from messages and from the prompt the offline model
reads; it never names what the fold does not hold."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.formats import DEFAULT_SUMMARY_PROMPT
from context_engine.summary.extractive import (
    MIN_BUDGET_TOKENS,
    extractive_budget,
    extractive_summary,
    message_entries,
    transcript_entries,
)
from context_engine.summary.faithfulness import SummarySource, content_refusal
from context_engine.summary.history import build_summary_message, render_history_section, summary_text
from context_engine.summary.rendering import render_messages
from context_engine.summary.validation import DEFAULT_HEADINGS
from context_engine.tokens.messages import DEFAULT_PROFILE, estimate_text, messages_tokens
from tests.context_engine.chats import conversation_messages
from tests.context_engine.summary.smollm2_replies import FOLDED


def test_it_keeps_the_folds_sentences_and_identifiers_under_the_five_headings():
    summary = extractive_summary(message_entries(FOLDED))
    assert [line for line in summary.splitlines() if line.startswith("## ")] == list(DEFAULT_HEADINGS)
    for kept in (
        "Read logs/worker-7.log and tell me why the nightly export job failed.",
        "Please keep the retry count but raise the upload timeout in src/export/upload.py.",
        "https://storage.example.net/exports/daily.csv",
        "48 MB",
        "read_file",
    ):
        assert kept in summary


def test_it_is_the_same_from_the_messages_and_from_their_rendered_transcript():
    from_messages = extractive_summary(message_entries(FOLDED))
    assert extractive_summary(transcript_entries(render_messages(FOLDED))) == from_messages


def test_an_earlier_summary_carries_its_intent_and_references_forward():
    first = extractive_summary(message_entries(FOLDED))
    earlier = build_summary_message(first, file_path="outputs/conversation_history/session_x.md")
    earlier.additional_kwargs["lc_source"] = "summarization"
    second = extractive_summary(message_entries([earlier, HumanMessage("Now deploy it.", id="u9")]))
    assert "Read logs/worker-7.log" in second.split("## USER")[0]
    assert "https://storage.example.net/exports/daily.csv" in second and "Now deploy it." in second


_texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=300)


@st.composite
def _conversations(draw):
    messages = []
    for n in range(draw(st.integers(min_value=1, max_value=12))):
        kind = draw(st.sampled_from(["human", "ai", "tool"]))
        text = draw(_texts) + draw(
            st.sampled_from(["", " see /srv/app/main.py", " https://x.example.com/a?b=1"])
        )
        if kind == "human":
            messages.append(HumanMessage(text, id=f"h{n}"))
        elif kind == "ai":
            messages.append(AIMessage(text, id=f"a{n}"))
        else:
            messages.append(ToolMessage(text, tool_call_id=f"c{n}", name="query_kb", id=f"t{n}"))
    return messages


@settings(max_examples=80, deadline=None)
@given(_conversations(), st.integers(min_value=0, max_value=2000))
def test_it_fits_its_budget_reads_as_a_summary_and_invents_nothing(messages, budget):
    summary = extractive_summary(message_entries(messages), budget_tokens=budget, profile=DEFAULT_PROFILE)
    assert estimate_text(summary, DEFAULT_PROFILE) <= max(budget, MIN_BUDGET_TOKENS)
    assert summary_text(summary) == summary.strip()  # the five headings, in order, something after the last
    source = SummarySource([render_history_section(messages)])
    assert not source.invented(summary)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=8), st.integers(min_value=0, max_value=4000))
def test_the_budget_is_a_bounded_share_of_what_is_folded(turns, chars):
    messages = conversation_messages(turns, big_result_chars=chars)
    folded = messages_tokens(messages, DEFAULT_PROFILE)
    budget = extractive_budget(folded_tokens=folded, trigger_tokens=4096)
    assert MIN_BUDGET_TOKENS <= budget <= max(folded // 4, MIN_BUDGET_TOKENS)
    summary = extractive_summary(message_entries(messages), budget_tokens=budget, profile=DEFAULT_PROFILE)
    assert estimate_text(summary, DEFAULT_PROFILE) <= budget


def test_the_extractive_summary_passes_the_content_rules_it_stands_in_for():
    messages = conversation_messages(4)
    summary = extractive_summary(message_entries(messages))
    source = SummarySource([render_history_section(messages)])
    refusal = content_refusal(
        summary, prompt=DEFAULT_SUMMARY_PROMPT, required=DEFAULT_HEADINGS, source=source
    )
    assert refusal is None
