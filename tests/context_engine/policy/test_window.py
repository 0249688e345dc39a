"""The window check (issue 24, invariants 1 and 3): calibration moves the trigger, never the window
check; a budget cut to the window holds in both measures."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from context_engine.policy import trigger as policy
from context_engine.tokens.calibration import FACTOR_MAX, FACTOR_MIN, Calibration

FACTORS = st.floats(FACTOR_MIN, FACTOR_MAX)
WINDOWS = st.integers(1_000, 200_000)


def test_a_request_over_the_window_by_our_raw_estimate_never_fits_whatever_the_calibration():
    # The reported case: factor 0.5 made a 22,178-token request look like 11,089 against 16,384.
    assert not policy.fits_window(22_178, 11_089, limit=16_384)
    assert not policy.fits_window(11_089, 22_178, limit=16_384)
    assert policy.fits_window(16_383, 8_192, limit=16_384)
    assert policy.fits_window(10**9, 10**9, limit=None)  # no window known


@given(raw=st.integers(0, 400_000), factor=FACTORS, window=WINDOWS)
def test_whatever_fits_the_window_is_under_it_by_both_measures(raw, factor, window):
    calibrated = Calibration(factor).corrected(raw)
    if policy.fits_window(raw, calibrated, limit=window):
        assert raw < window and calibrated < window


@given(raw=st.integers(0, 400_000), factor=FACTORS, window=WINDOWS, trigger=st.integers(1_000, 200_000))
def test_a_request_that_does_not_fit_the_window_is_always_compressed(raw, factor, window, trigger):
    calibrated = Calibration(factor).corrected(raw)
    needs = policy.needs_compression(calibrated, trigger=trigger, raw=raw, context_window=window)
    suffices = policy.compaction_suffices(
        calibrated, trigger=trigger, overflowed=False, raw=raw, context_window=window
    )
    if max(raw, calibrated) >= window:
        assert needs and not suffices
    else:
        assert needs == (calibrated >= trigger) and suffices == (calibrated < trigger)


@given(limit=st.integers(1, 200_000), factor=FACTORS)
def test_a_budget_cut_to_the_window_holds_in_both_measures(limit, factor):
    budget = policy.raw_within(limit, factor=factor)
    assert policy.fits_window(budget, Calibration(factor).corrected(budget), limit=limit)


@given(tokens=st.integers(0, 50_000), raw=st.integers(0, 50_000), window=st.integers(1, 50_000))
def test_held_back_and_fallback_compare_like_with_like(tokens, raw, window):
    fits = raw < window and tokens < window
    assert policy.held_back_fits(tokens, raw=raw, limit=window) == fits
    assert policy.fallback_fits(tokens, raw=raw, context_window=window, overflowed_at=None) == fits


def test_the_send_limit_is_the_smaller_of_the_window_and_what_overflowed():
    assert policy.send_limit(context_window=8_000, overflowed_at=None) == 8_000
    assert policy.send_limit(context_window=8_000, overflowed_at=6_000) == 6_000
    assert policy.send_limit(context_window=None, overflowed_at=None) is None
