"""``policy.plan``, the one decision, as properties over generated measures: the request passes only
below T and within the window; a compacted candidate goes out only when it would have passed and
nothing overflowed; nothing is summarized that has nothing to fold; the spend guard holds back only
what it refuses; the manual path never passes or sends a candidate; the budgets are the trigger's."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from context_engine.config import CompressionConfig, SpendLimits
from context_engine.policy import trigger
from context_engine.policy.plan import (
    Compact,
    Fallback,
    FallbackReason,
    Fold,
    HeldBack,
    Measure,
    Pass,
    Sizes,
    Summarize,
    plan,
    summary_budget,
    tail_cap,
)

NOW = datetime(2026, 12, 6, tzinfo=UTC)
sizes = st.builds(
    lambda raw, drift: Sizes(raw, max(raw + drift, 0)), st.integers(0, 40_000), st.integers(-2_000, 2_000)
)
configs = st.builds(
    lambda t, window, calls: CompressionConfig(
        trigger_tokens=t, context_window=window, spend=SpendLimits(max_calls_per_hour=calls)
    ),
    st.integers(1_000, 20_000),
    st.one_of(st.none(), st.integers(4_000, 32_000)),
    st.integers(0, 2),
)


def _fits(config: CompressionConfig, s: Sizes) -> bool:
    return s.tokens < config.trigger_tokens and trigger.fits_window(
        s.raw, s.tokens, limit=config.context_window
    )


@given(config=configs, request=sizes, overflowed=st.booleans())
def test_a_request_passes_only_below_t_within_the_window_and_not_after_an_overflow(
    config, request, overflowed
):
    decision = plan(config, Measure(request, overflowed_at=request.tokens if overflowed else None))
    assert decision == (Pass() if _fits(config, request) and not overflowed else Compact())


@given(
    config=configs,
    request=sizes,
    candidates=st.lists(sizes, min_size=1, max_size=2),
    overflowed=st.booleans(),
)
def test_the_first_compacted_candidate_that_fits_goes_out_else_the_fold_is_measured(
    config, request, candidates, overflowed
):
    measure = Measure(request, overflowed_at=1 if overflowed else None, compacted=tuple(candidates))
    fitting = [i for i, s in enumerate(candidates) if _fits(config, s) and not overflowed]
    assert plan(config, measure) == Compact(send=fitting[0] if fitting else None)


@given(
    config=configs,
    request=sizes,
    cutoff=st.integers(-1, 30),
    folded=st.integers(0, 40_000),
    spent_calls=st.integers(0, 3),
    forced=st.booleans(),
    factor=st.floats(0.5, 2.0),
)
def test_a_fold_is_summarized_held_back_or_falls_back_as_the_counts_say(
    config, request, cutoff, folded, spent_calls, forced, factor
):
    ledger = [{"at": NOW.isoformat(), "input_tokens": 10}] * spent_calls
    fold = Fold(cutoff, folded, ledger, NOW)
    measure = Measure(request, factor=factor, compacted=() if not forced else None, fold=fold, forced=forced)
    decision = plan(config, measure)
    assert not isinstance(decision, Pass | Compact)  # a measured fold is always decided
    if cutoff <= 0:
        assert decision == Fallback(FallbackReason.NOTHING_TO_FOLD)
    elif config.spend.max_calls_per_hour and spent_calls >= config.spend.max_calls_per_hour:
        assert isinstance(decision, HeldBack) and not decision.guard.allowed
    else:
        assert decision == Summarize(cutoff, tail_cap(config, measure), summary_budget(config, measure))
        window = config.context_window
        # The summary call's input fits the window in both measures, whatever the calibration.
        if window:
            assert max(decision.budget, round(decision.budget * factor)) < window
