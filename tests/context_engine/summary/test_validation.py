"""Only a summary becomes memory: an answer is checked for what a summary has (the default prompt's five
headings in order, or what the admin requires, or a length in proportion to what was folded), and an
HTML page, a JSON body, a refusal or a summary cut off mid-way is refused, whatever the prompt."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage

from context_engine.errors import NotASummaryError, SummaryError
from context_engine.formats import DEFAULT_SUMMARY_PROMPT
from context_engine.summary.history import summary_text
from context_engine.summary.validation import (
    DEFAULT_HEADINGS,
    DEFAULT_RULE,
    SummaryRule,
    min_summary_chars,
    summary_rule,
)

CUSTOM_PROMPT = "Summarize briefly:\n{messages}"
CUSTOM_DEFAULTS = summary_rule(prompt=CUSTOM_PROMPT, folded_chars=20_000)

# Section bodies: prose (with identifiers, CJK, markdown), never empty.
_bodies = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.sampled_from("\n-*`&<>"),
    min_size=1,
    max_size=80,
).filter(lambda body: body.strip().strip(" \t\r\n*_:：") and "#" not in body)  # as compose() strips it


def compose(headings, bodies) -> str:
    return "\n\n".join(f"{heading}\n{body.strip()}" for heading, body in zip(headings, bodies, strict=True))


_section_bodies = st.lists(_bodies, min_size=len(DEFAULT_HEADINGS), max_size=len(DEFAULT_HEADINGS))
default_summaries = _section_bodies.map(lambda bodies: compose(DEFAULT_HEADINGS, bodies))


def html_pages():
    title = st.sampled_from(["502 Bad Gateway", "503 Service Unavailable", "Just a moment...", "Error"])
    head = st.sampled_from(["<html>", '<!DOCTYPE html>\n<html lang="en">', "<HTML>", "<?xml version='1.0'?>"])
    return st.builds(
        lambda h, t, b: f"{h}<head><title>{t}</title></head><body><h1>{t}</h1><p>{b}</p></body></html>",
        head,
        title,
        st.text(max_size=200).map(lambda s: s.replace("<", " ")),
    )


def json_bodies():
    leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=40)
    values = st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    )
    return st.dictionaries(st.text(max_size=12), values, min_size=1, max_size=5).map(
        lambda body: json.dumps(body, ensure_ascii=False)
    )


def refusals():
    opening = st.sampled_from(
        [
            "I'm sorry, but I can't help with that.",
            "I’m sorry, I cannot summarize this conversation.",
            "Sorry, I can't assist with this request.",
            "I cannot provide a summary of this content.",
            "I am unable to summarize this.",
            "As an AI language model, I do not have access to the conversation.",
            "抱歉，我无法完成这个请求。",
            "我无法总结这段对话。",
        ]
    )
    return st.builds(lambda o, rest: f"{o} {rest}".strip(), opening, st.text(max_size=300))


@given(default_summaries)
def test_a_summary_under_the_five_headings_in_order_is_a_summary(text):
    assert summary_text(f"  {text}\n") == text.strip()
    assert summary_text(AIMessage(text), summary_rule(prompt=DEFAULT_SUMMARY_PROMPT)) == text.strip()


@given(default_summaries, st.data())
def test_a_summary_cut_off_before_its_last_sections_text_is_refused(text, data):
    last_body = text.rindex(DEFAULT_HEADINGS[-1]) + len(DEFAULT_HEADINGS[-1])
    cut = data.draw(st.integers(min_value=1, max_value=last_body))
    with pytest.raises(SummaryError):
        summary_text(text[:cut])


@given(_section_bodies, st.permutations(DEFAULT_HEADINGS), st.integers(0, len(DEFAULT_HEADINGS) - 1))
def test_headings_out_of_order_or_missing_are_refused(bodies, order, dropped):
    if list(order) != list(DEFAULT_HEADINGS):
        with pytest.raises(NotASummaryError):
            summary_text(compose(order, bodies))
    headings = [h if i != dropped else "## SOMETHING ELSE" for i, h in enumerate(DEFAULT_HEADINGS)]
    with pytest.raises(NotASummaryError, match="missing"):
        summary_text(compose(headings, bodies))


@settings(max_examples=60)
@given(st.one_of(html_pages(), json_bodies(), refusals()))
def test_markup_json_and_refusals_are_never_a_summary_whatever_the_prompt(text):
    for rule in (DEFAULT_RULE, CUSTOM_DEFAULTS, SummaryRule(required=("Decisions",)), SummaryRule((), 1)):
        with pytest.raises(SummaryError):
            summary_text(text, rule)


@pytest.mark.parametrize(
    "metadata", [{"finish_reason": "length"}, {"stop_reason": "max_tokens"}, {"finish_reason": "max_tokens"}]
)
def test_an_answer_the_model_ran_out_of_tokens_in_is_refused(metadata):
    complete = "\n\n".join(f"{heading}\nSomething." for heading in DEFAULT_HEADINGS)
    with pytest.raises(NotASummaryError, match="cut off"):
        summary_text(AIMessage(complete, response_metadata=metadata))
    assert summary_text(AIMessage(complete, response_metadata={"finish_reason": "stop"})) == complete


def test_headings_may_carry_other_levels_bold_case_and_a_colon_and_a_preamble():
    text = "Here is the summary.\n\n" + "\n\n".join(
        f"{variant}\nText {i}."
        for i, variant in enumerate(
            [
                "# Session intent",
                "**USER REQUIREMENTS AND PREFERENCES**",
                "### Progress and decisions:",
                "## ARTIFACTS AND REFERENCES",
                "## NEXT STEPS",
            ]
        )
    )
    assert summary_text(text) == text
    with pytest.raises(NotASummaryError):  # a heading inside a sentence is no heading
        summary_text(text.replace("## NEXT STEPS\n", "See the NEXT STEPS "))


def test_a_custom_prompt_requires_the_admins_lines_in_order():
    rule = summary_rule(prompt=CUSTOM_PROMPT, required=["## Goal", "", "Decisions:", "  Open questions  "])
    assert rule.required == ("Goal", "Decisions", "Open questions")
    good = "## Goal\nShip v2.\nDecisions: use Redis.\nOpen questions: none."
    assert summary_text(good, rule) == good
    for bad in (
        "Decisions: use Redis.\n## Goal\nShip v2.\nOpen questions: none.",  # out of order
        "## Goal\nShip v2.\nDecisions: use Redis.",  # missing
        "## Goal\nShip v2.\nDecisions: use Redis.\nOpen questions:",  # nothing after the last
    ):
        with pytest.raises(NotASummaryError):
            summary_text(bad, rule)


def test_a_custom_prompt_with_nothing_required_needs_a_length_in_proportion_to_what_was_folded():
    assert min_summary_chars(0) == 1 and min_summary_chars(200) == 24
    assert min_summary_chars(10_000) == 100 and min_summary_chars(10_000_000) == 200
    rule = summary_rule(prompt=CUSTOM_PROMPT, folded_chars=10_000)
    assert rule == SummaryRule(required=(), min_chars=100)
    with pytest.raises(NotASummaryError, match="fewer than the 100"):
        summary_text("The user asked about Redis.", rule)
    prose = "The user asked how to cache sessions; we chose Redis with a one-hour TTL and wrote config/redis.py for it."
    assert summary_text(prose, rule) == prose
    # A summary wrapped in <summary> tags is prose, not markup.
    assert summary_text(f"<summary>{prose}</summary>", rule) == f"<summary>{prose}</summary>"


def test_only_the_default_prompt_requires_the_default_headings():
    assert summary_rule(prompt=DEFAULT_SUMMARY_PROMPT, required=["ignored"]) is DEFAULT_RULE
    assert summary_rule(prompt=f"\n{DEFAULT_SUMMARY_PROMPT}  ") is DEFAULT_RULE
    assert DEFAULT_RULE.required == DEFAULT_HEADINGS and len(DEFAULT_HEADINGS) == 5
    assert summary_rule(prompt=CUSTOM_PROMPT).required == ()
