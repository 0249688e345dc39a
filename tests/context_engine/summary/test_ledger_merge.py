"""Every summary call is counted (issue 37 item 4): a run's calls are merged into the thread's ledger
once each, however often the run's end writes them and whatever part its own updates already saved."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from context_engine.summary.spend_guard import SharedLedger, ledger_merge, record_call

NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)


@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=50), st.integers(min_value=1, max_value=5000)),
        max_size=8,
    ),
    st.integers(min_value=0, max_value=8),
)
def test_a_runs_calls_enter_the_ledger_once_whatever_part_of_them_it_already_holds(calls, saved):
    ledger = SharedLedger()
    for minutes, tokens in calls:
        ledger.spent([tokens], now=NOW - timedelta(minutes=minutes))
    held: list = []
    for minutes, tokens in calls[:saved]:  # the updates the run did save
        held = record_call(held, now=NOW - timedelta(minutes=minutes), input_tokens=tokens)
    merged = ledger_merge(held, ledger.made(), now=NOW)
    final = merged if merged is not None else held
    assert len(final) == len(calls)
    assert ledger_merge(final, ledger.made(), now=NOW) is None  # idempotent: a second write adds nothing


def test_a_sub_agents_calls_count_among_the_runs():
    ledger = SharedLedger()
    ledger.spent([100, 120], now=NOW)
    ledger.lend().spent([90], now=NOW)
    assert sorted(c["input_tokens"] for c in ledger.made()) == [90, 100, 120]
