"""Every decision of automatic compression, on its own: counts, config and flags in, the decision out
(``context_engine.policy.trigger``). The middleware only carries these out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_engine.config import CompressionConfig
from context_engine.policy import trigger as policy
from context_engine.policy.trigger import SummaryStep

tokens = st.integers(min_value=0, max_value=2_000_000)
windows = st.none() | st.integers(min_value=1, max_value=2_000_000)
overflows = st.none() | st.integers(min_value=1, max_value=2_000_000)


@pytest.mark.parametrize(
    ("size", "overflowed", "expected"),
    [(4095, False, False), (4096, False, True), (4097, False, True), (10, True, True)],
)
def test_a_request_is_compressed_at_or_above_the_trigger_or_after_an_overflow(size, overflowed, expected):
    assert policy.needs_compression(size, trigger=4096, overflowed=overflowed) is expected


@given(size=tokens, trigger=st.integers(min_value=1, max_value=2_000_000), overflowed=st.booleans())
def test_a_compacted_view_goes_out_only_below_the_trigger_and_never_after_an_overflow(
    size, trigger, overflowed
):
    suffices = policy.compaction_suffices(size, trigger=trigger, overflowed=overflowed)
    assert suffices == (not overflowed and size < trigger)
    # Whatever compaction suffices for never needed compression in the first place by its own size.
    assert not (suffices and policy.needs_compression(size, trigger=trigger, overflowed=overflowed))


@pytest.mark.parametrize(
    ("cutoff", "allowed", "expected"),
    [
        (0, True, SummaryStep.NOTHING_TO_FOLD),
        (0, False, SummaryStep.NOTHING_TO_FOLD),  # nothing to fold: the guard is not even asked
        (-1, True, SummaryStep.NOTHING_TO_FOLD),
        (5, False, SummaryStep.HELD_BACK),
        (5, True, SummaryStep.SUMMARIZE),
    ],
)
def test_the_summary_step_after_compaction(cutoff, allowed, expected):
    assert policy.summary_step(cutoff=cutoff, guard_allowed=allowed) is expected


@given(trigger=st.integers(min_value=1, max_value=1_000_000), overflowed_at=overflows)
def test_the_kept_tail_takes_at_most_half_of_the_trigger_and_of_what_overflowed(trigger, overflowed_at):
    cap = policy.tail_cap(CompressionConfig(trigger_tokens=trigger), overflowed_at=overflowed_at)
    assert cap <= trigger // 2
    if overflowed_at is not None:
        assert cap <= overflowed_at // 2
    else:
        assert cap == trigger // 2


@given(trigger=st.integers(min_value=1, max_value=1_000_000), window=windows, overflowed_at=overflows)
def test_the_summary_call_reads_at_most_three_quarters_of_the_window_and_half_of_what_overflowed(
    trigger, window, overflowed_at
):
    config = CompressionConfig(trigger_tokens=trigger, context_window=window)
    budget = policy.summary_budget(config, overflowed_at=overflowed_at)
    assert budget <= (int(window * policy.SUMMARY_INPUT_SHARE) if window else trigger)
    if overflowed_at is not None:
        assert budget <= overflowed_at // 2


@given(window=windows, overflowed_at=overflows)
def test_the_window_limit_leaves_room_under_the_window_and_under_what_overflowed(window, overflowed_at):
    limit = policy.window_limit(context_window=window, overflowed_at=overflowed_at)
    if window is None and overflowed_at is None:
        assert limit is None
        return
    assert limit is not None
    if window:
        assert limit <= window * policy.HELD_BACK_WINDOW_SHARE
    if overflowed_at is not None:
        assert limit <= overflowed_at * policy.HELD_BACK_WINDOW_SHARE


@given(size=tokens, window=windows, overflowed_at=overflows)
def test_a_held_back_view_goes_out_whole_only_under_the_window_limit(size, window, overflowed_at):
    limit = policy.window_limit(context_window=window, overflowed_at=overflowed_at)
    fits = policy.held_back_fits(size, limit=limit)
    if fits and window:
        assert size < window  # never sent over the window by our own estimate
    if limit is not None:
        assert fits == (size < limit)


@given(size=tokens, window=windows, overflowed_at=overflows)
def test_after_a_failed_summary_the_fallback_goes_out_only_if_it_fits(size, window, overflowed_at):
    fits = policy.fallback_fits(size, context_window=window, overflowed_at=overflowed_at)
    if fits:
        assert window is None or size < window
        assert overflowed_at is None or size < overflowed_at
    else:
        assert (window is not None and size >= window) or (
            overflowed_at is not None and size >= overflowed_at
        )


def test_the_figure_stated_is_the_one_that_failed_the_window_check_the_raw_one_first():
    from context_engine.policy.trigger import failed_figure

    assert failed_figure(20_000, 10_000, limit=16_384) == 20_000  # raw failed; calibrated did not
    assert failed_figure(20_000, 30_000, limit=16_384) == 20_000  # both failed: the raw one is stated
    assert failed_figure(12_000, 18_000, limit=16_384) == 18_000  # only the calibrated one failed
    assert failed_figure(12_000, 9_000, limit=16_384) == 12_000  # none failed: the platform's own estimate
    assert failed_figure(12_000, 9_000, limit=None) == 12_000
