"""The summary circuit breaker (issue 37 item 1): refusals within the window pause model summaries for the
cooldown after the latest; fewer, older or cooled-down refusals do not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from context_engine.config import BreakerLimits
from context_engine.summary.breaker import paused_until, record_refusal

NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)
LIMITS = BreakerLimits(refusals=3, window_seconds=3600, cooldown_seconds=1800)


def _refused(*minutes_ago: int) -> list:
    history: list = []
    for minutes in sorted(minutes_ago, reverse=True):
        history = record_refusal(
            history, code="too_little_shared", limits=LIMITS, now=NOW - timedelta(minutes=minutes)
        )
    return history


def test_three_refusals_within_the_hour_pause_model_summaries_for_half_an_hour_after_the_latest():
    assert paused_until(_refused(50, 20, 5), limits=LIMITS, now=NOW) == NOW + timedelta(minutes=25)
    assert paused_until(_refused(20, 5), limits=LIMITS, now=NOW) is None  # two are not enough
    assert paused_until(_refused(70, 20, 5), limits=LIMITS, now=NOW) is None  # one left the window
    assert paused_until(_refused(55, 45, 35), limits=LIMITS, now=NOW) is None  # cooled down


def test_zero_refusals_turns_the_breaker_off_and_garbage_reads_as_nothing():
    off = BreakerLimits(refusals=0, window_seconds=3600, cooldown_seconds=1800)
    assert paused_until(_refused(3, 2, 1), limits=off, now=NOW) is None
    assert paused_until([{"at": "yesterday"}, "x", None, {"at": None}], limits=LIMITS, now=NOW) is None


@given(st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_paused_exactly_when_enough_recent_refusals_and_the_latest_within_the_cooldown(minutes):
    history = _refused(*minutes)
    recent = [m for m in minutes if m < 60]
    expected = len(recent) >= LIMITS.refusals and min(recent) < 30
    assert (paused_until(history, limits=LIMITS, now=NOW) is not None) == expected
