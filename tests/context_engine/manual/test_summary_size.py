"""The preview's estimate of the next summary's size (issue 24): fitted on the agent's own summaries
per folded token, with a range from how far they strayed; without enough history, the old fallbacks
with a wide range."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from context_engine.manual.summary_size import MIN_HISTORY, summary_size

# Folds as an agent's records hold them: hundreds to tens of thousands of tokens, spread over a range
# (a fit on five folds of 200-204 tokens cannot say much about 5,000).
folds = st.lists(
    st.integers(min_value=500, max_value=60_000), min_size=MIN_HISTORY, max_size=40, unique=True
).filter(lambda f: max(f) >= 4 * min(f))


@given(folds=folds, a=st.floats(min_value=5.0, max_value=50.0), b=st.floats(min_value=0.1, max_value=0.9))
def test_summaries_that_follow_a_power_law_are_estimated_within_two_percent(folds, a, b):
    history = [(f, round(a * f**b)) for f in folds]  # whole tokens, as records hold them
    target = 5_000
    size = summary_size(folded_tokens=target, history=history)
    assert math.isclose(size.tokens, a * target**b, rel_tol=0.02, abs_tol=2)
    assert size.low <= size.tokens <= size.high and not size.unsure


@given(folds=folds, noise=st.lists(st.floats(min_value=0.5, max_value=2.0), min_size=40, max_size=40))
def test_the_range_holds_the_estimate_and_widens_with_the_spread(folds, noise):
    steady = summary_size(folded_tokens=8_000, history=[(f, round(20 * f**0.5)) for f in folds])
    history = [(f, max(1, round(20 * f**0.5 * noise[i]))) for i, f in enumerate(folds)]
    size = summary_size(folded_tokens=8_000, history=history)
    assert 0 < size.low <= size.tokens <= size.high
    # Summaries that strayed from the fit give a range at least as wide (relative) as steady ones.
    assert (size.high - size.low) / size.tokens >= (steady.high - steady.low) / steady.tokens - 0.01


def test_a_summary_never_shrinks_as_more_is_folded():
    history = [(1000, 900), (2000, 600), (4000, 400), (8000, 300), (16000, 200)]  # a falling trend
    assert summary_size(folded_tokens=32_000, history=history).tokens >= 200  # slope clamped at 0


def test_without_history_the_current_summary_then_the_hint_then_a_share_with_a_wide_range():
    assert summary_size(folded_tokens=10_000, current=700).tokens == 700
    assert summary_size(folded_tokens=10_000, hint=450).tokens == 450
    first = summary_size(folded_tokens=10_000, frame_tokens=60)
    assert first.tokens == 800 + 60 and first.unsure  # 8% of the fold, plus the message's frame
    too_few = summary_size(folded_tokens=10_000, history=[(1000, 300)] * (MIN_HISTORY - 1), current=500)
    assert too_few.tokens == 500
