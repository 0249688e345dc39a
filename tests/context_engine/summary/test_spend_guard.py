"""The spend guard's pure core: calls and input tokens per thread per rolling hour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from context_engine.summary.spend_guard import (
    MAX_REMEMBERED_CALLS,
    REASON_CALLS,
    REASON_TOKENS,
    SpendLimits,
    guard_check,
    recent_calls,
    record_call,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _history(*minutes_ago: int, tokens: int = 100) -> list[dict]:
    return [{"at": (NOW - timedelta(minutes=m)).isoformat(), "input_tokens": tokens} for m in minutes_ago]


def test_no_limits_always_allow():
    decision = guard_check(_history(1, 2, 3), limits=SpendLimits(), now=NOW, input_tokens=10**9)
    assert decision.allowed and decision.calls_in_window == 3


def test_the_nth_call_in_an_hour_is_held_back_until_the_oldest_leaves_the_window():
    limits = SpendLimits(max_calls_per_hour=3)
    assert guard_check(_history(10, 20), limits=limits, now=NOW, input_tokens=1).allowed
    held = guard_check(_history(10, 20, 50), limits=limits, now=NOW, input_tokens=1)
    assert not held.allowed and held.reason == REASON_CALLS
    assert held.retry_at == NOW + timedelta(minutes=10)
    # Calls older than an hour no longer count.
    assert guard_check(_history(10, 20, 61), limits=limits, now=NOW, input_tokens=1).allowed


def test_input_tokens_are_capped_per_hour_including_the_call_asked_for():
    limits = SpendLimits(max_input_tokens_per_hour=1000)
    assert guard_check(_history(5, tokens=400), limits=limits, now=NOW, input_tokens=600).allowed
    held = guard_check(_history(5, tokens=400), limits=limits, now=NOW, input_tokens=601)
    assert not held.allowed and held.reason == REASON_TOKENS and held.input_tokens_in_window == 400


def test_record_call_keeps_the_last_hour_only_and_stays_bounded():
    history = record_call(_history(90, 30), now=NOW, input_tokens=50)
    assert [c["input_tokens"] for c in history] == [100, 50]
    many = [{"at": NOW.isoformat(), "input_tokens": 1}] * (MAX_REMEMBERED_CALLS + 10)
    assert len(record_call(many, now=NOW, input_tokens=1)) == MAX_REMEMBERED_CALLS


def test_malformed_history_entries_are_ignored():
    assert recent_calls([None, {"at": "yesterday"}, {"input_tokens": 5}, "x"], now=NOW) == []  # type: ignore[list-item]
