"""Calibration from reported usage (issue 16, item 2): the pure arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_engine.tokens.calibration import (
    ALPHA,
    FACTOR_MAX,
    FACTOR_MIN,
    MAX_STEP,
    NEUTRAL,
    Calibration,
    CalibrationMemory,
)


def test_starts_neutral_and_a_model_that_never_reports_keeps_it():
    calibration = NEUTRAL
    for _ in range(20):
        calibration = calibration.observe(estimated=5000, reported=None)
    assert calibration == Calibration(1.0, 0)
    assert calibration.corrected(1234) == 1234


def test_one_reading_moves_the_factor_a_bounded_step_towards_it_never_outright():
    calibration = NEUTRAL.observe(estimated=10_000, reported=5_000)  # an under-reporting proxy
    assert calibration.factor == pytest.approx(1 - MAX_STEP)  # not 0.5: the trigger barely moves
    assert calibration.observations == 1
    calibration = Calibration(0.7, 5).observe(estimated=10_000, reported=7_300)
    assert calibration.factor == pytest.approx(0.7 + 0.03 * ALPHA)  # a small gap: half-way
    assert calibration.corrected(10_000) == 7_150


def test_agreeing_readings_converge_to_the_reported_ratio():
    calibration = NEUTRAL
    for _ in range(12):
        calibration = calibration.observe(estimated=10_000, reported=7_000)
    assert calibration.factor == pytest.approx(0.7, abs=0.01)


def test_readings_far_from_the_estimate_are_ignored():
    calibration = Calibration(0.8, 12)
    assert calibration.observe(estimated=10_000, reported=100) == calibration  # cached prefix as 0?
    assert calibration.observe(estimated=10_000, reported=90_000) == calibration
    assert calibration.observe(estimated=20, reported=40) == calibration  # too small to say


def test_one_odd_reading_moves_the_factor_by_a_bounded_step():
    calibration = Calibration(0.8, 50)
    assert calibration.observe(estimated=10_000, reported=16_000).factor == pytest.approx(
        0.8 * (1 + MAX_STEP)
    )
    assert calibration.observe(estimated=10_000, reported=4_000).factor == pytest.approx(0.8 * (1 - MAX_STEP))


@given(
    readings=st.lists(
        st.tuples(st.integers(0, 200_000), st.one_of(st.none(), st.integers(0, 400_000))), max_size=60
    )
)
def test_the_factor_stays_bounded(readings):
    calibration = NEUTRAL
    for estimated, reported in readings:
        calibration = calibration.observe(estimated=estimated, reported=reported)
        assert FACTOR_MIN <= calibration.factor <= FACTOR_MAX


def test_memory_is_shared_by_whoever_holds_it():
    memory = CalibrationMemory()
    memory.observe(estimated=1000, reported=1500)
    assert memory.current() == Calibration(1 + MAX_STEP, 1)


READINGS = st.lists(
    st.tuples(st.integers(0, 200_000), st.one_of(st.none(), st.integers(0, 400_000))), max_size=60
)


@given(readings=READINGS)
def test_no_reading_moves_the_factor_by_more_than_a_bounded_step(readings):
    calibration = NEUTRAL
    for estimated, reported in readings:
        updated = calibration.observe(estimated=estimated, reported=reported)
        ratio = updated.factor / calibration.factor
        assert 1 - MAX_STEP - 1e-3 <= ratio <= 1 + MAX_STEP + 1e-3
        calibration = updated


@given(readings=READINGS)
def test_only_several_agreeing_readings_move_the_factor_far(readings):
    calibration = NEUTRAL
    for estimated, reported in readings:
        calibration = calibration.observe(estimated=estimated, reported=reported)
    n = calibration.observations
    # Halving (or doubling) the factor takes at least 7 readings, all pulling the same way.
    assert (1 - MAX_STEP) ** n - 1e-3 <= calibration.factor <= (1 + MAX_STEP) ** n + 1e-3
