"""Degenerate text (issue 16, item 3): long runs of one character or of a short pattern are not
underestimated. True counts below were computed once with ``bench/tokenizers.py`` (cl100k, Qwen)."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.tokens.messages import (
    DIGIT_FLOOR,
    LETTER_FLOOR,
    PATTERN_FLOOR,
    PROFILES,
    PUNCT_FLOORS,
    estimate_text,
)

# (name, text, true cl100k tokens, true Qwen tokens)
DEGENERATE: list[tuple[str, str, int, int]] = [
    ("pattern", "ab" * 2000, 2000, 2000),
    ("rare pair", "zq" * 500, 1000, 1000),
    ("one letter", "a" * 1000, 125, 125),
    ("punctuation pair", ".-" * 300, 300, 300),
    ("braces", "{}" * 500, 500, 500),
    ("inside text", "Output follows: " + "xyzw" * 250 + " (end of output)", 508, 508),
    ("markdown rule", "|---" * 30 + "|", 61, 61),
]


@pytest.mark.parametrize(("name", "text", "cl100k", "qwen"), DEGENERATE, ids=[d[0] for d in DEGENERATE])
def test_degenerate_runs_are_not_underestimated(name, text, cl100k, qwen):
    assert estimate_text(text, PROFILES["cl100k"]) >= cl100k
    assert estimate_text(text, PROFILES["qwen"]) >= qwen
    assert estimate_text(text, PROFILES["conservative"]) >= max(cl100k, qwen)


def test_the_issue_example():
    # 231 tokens before this estimator version, 2,000 in reality.
    assert estimate_text("ab" * 2000, PROFILES["o200k"]) >= 2000


def test_one_repeated_punctuation_character_keeps_its_estimate():
    # BPE merges '-' * 80 into a few long tokens (cl100k: 2 tokens per 50 dashes); no floor applies.
    assert estimate_text("-" * 2000, PROFILES["cl100k"]) < 200


UNITS = st.text(
    alphabet=string.ascii_letters + string.digits + string.punctuation + " ", min_size=1, max_size=4
)


def _lower_bound(unit: str, length: int) -> float:
    """What a BPE tokenizer spends at least on ``unit`` repeated to ``length`` characters, per the
    measurements the floors come from (``context_engine/tokens/text.py``)."""
    if unit.isspace():
        return 0.0  # whitespace runs merge into long tokens
    if " " in unit:  # a space rides on the next character's token
        return PATTERN_FLOOR * length * (len(unit) - unit.count(" ")) / len(unit)
    if len(set(unit)) == 1:  # one character repeated ('abab' is a pattern, 'aaaa' one character)
        char = unit[0]
        if char.isalpha():
            return LETTER_FLOOR * length
        if char.isdigit():
            return DIGIT_FLOOR * length
        # Punctuation: the measured maximum, or at least one token per 64 characters (the longest
        # punctuation merges, e.g. 64 dashes, are single tokens).
        return max(PUNCT_FLOORS.get(char, 0.0), 1 / 64) * length
    return PATTERN_FLOOR * length


@settings(max_examples=300, deadline=None)
@given(
    unit=UNITS,
    repeats=st.integers(min_value=64, max_value=1500),
    prefix=st.sampled_from(["", "Tool output:\n", "结果如下："]),
    suffix=st.sampled_from(["", "\nDone.", " 完成"]),
    profile=st.sampled_from(sorted(PROFILES)),
)
def test_repeated_units_are_bounded_from_below(unit, repeats, prefix, suffix, profile):
    run = unit * repeats
    text = prefix + run + suffix
    # The run alone may end on a partial unit at a boundary: allow one unit of slack.
    bound = _lower_bound(unit, len(run)) - PATTERN_FLOOR * len(unit)
    assert estimate_text(text, PROFILES[profile]) >= bound
