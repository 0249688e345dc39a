"""How big the next summary will be, before the model writes it (the preview's estimate, issue 24):
from what it will fold, fitted on this agent's own summaries (``summary_tokens ≈ a · folded_tokens^b``
in log space, ``0 <= b <= 1``), with a range from how far the fit missed those summaries when each was
left out of it (a summary not yet written is predicted as one left out is, not as one fitted). Without
enough history: the thread's current summary, else the agent's recent mean, else a bounded share of
what is folded, with a wide range. Pure arithmetic; no model call."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Fewer summaries than this (or all folding the same amount) give no fit.
MIN_HISTORY = 5
HISTORY_USED = 40  # the agent's latest summaries: a model or prompt change shows within this many
# The range spans the fit's held-out errors (each recorded summary predicted by the fit on the others):
# from the smallest to the largest. In-sample residuals, or their middle 90%, covered the applied size of
# only 72-83% of previews through a provider's client (``make bench``, section 6); these cover 90%+.
# A range wider than UNSURE_SPREAD either side of the estimate is shown as a range, not a number.
RANGE_QUANTILES = (0.0, 1.0)
# ... widened by a fifth in log space: the largest error among the last few dozen summaries is not the
# largest the next one can have (without it, 89.8% of the generated previews of the stub test).
RANGE_WIDENING = 1.2
UNSURE_SPREAD = 0.10
UNSURE_MIN_TOKENS = 20  # a range narrower than this is one number, however small the summary
# Without a fit the estimate may be half of the summary, or a fraction of it: a summary that folds more
# than the one it goes by (the thread's current one, the agent's mean) covers that and more. Measured
# through a provider's client (``make bench`` section 6, tests/compression/test_preview_range_stub.py):
# +/-50% missed a third of these previews.
FALLBACK_LOW_SHARE = 0.5
FALLBACK_HIGH_SHARE = 2.5
# A first summary's size, with no history at all: a share of what it folds, bounded.
FIRST_SUMMARY_SHARE = 0.08
FIRST_SUMMARY_MIN_TOKENS = 150
FIRST_SUMMARY_MAX_TOKENS = 1200


@dataclass(frozen=True)
class SummarySize:
    tokens: int
    low: int
    high: int

    @property
    def unsure(self) -> bool:
        """The range is too wide to show one number."""
        return self.high - self.low > max(2 * UNSURE_SPREAD * self.tokens, UNSURE_MIN_TOKENS)


def summary_size(
    *,
    folded_tokens: int,
    history: Sequence[tuple[int, int]] = (),
    current: int | None = None,
    hint: int | None = None,
    frame_tokens: int = 0,
) -> SummarySize:
    """The next summary message's tokens for a fold of ``folded_tokens``. ``history``: this agent's
    recent ``(folded_tokens, summary_tokens)`` pairs, oldest first; ``current``: the thread's summary
    now; ``hint``: the mean size of the agent's recent summaries; ``frame_tokens``: the summary
    message's fixed frame, for the last resort."""
    fitted = _fit([(f, s) for f, s in history[-HISTORY_USED:] if f > 0 and s > 0], folded_tokens)
    if fitted is not None:
        return fitted
    ceiling = 0
    if current:
        estimate = current
    elif hint:
        estimate = hint
    else:
        share = int(folded_tokens * FIRST_SUMMARY_SHARE)
        estimate = min(max(share, FIRST_SUMMARY_MIN_TOKENS), FIRST_SUMMARY_MAX_TOKENS) + frame_tokens
        # Nothing to go by: up to the largest first summary this assumes, short of what is folded.
        ceiling = min(FIRST_SUMMARY_MAX_TOKENS + frame_tokens, folded_tokens)
    return SummarySize(
        estimate, int(estimate * FALLBACK_LOW_SHARE), max(round(estimate * FALLBACK_HIGH_SHARE), ceiling)
    )


def _fit(pairs: list[tuple[int, int]], folded_tokens: int) -> SummarySize | None:
    if len(pairs) < MIN_HISTORY or folded_tokens <= 0:
        return None
    xs = [math.log(f) for f, _ in pairs]
    ys = [math.log(s) for _, s in pairs]
    slope, intercept = _line(xs, ys)
    errors = sorted(
        ys[k] - (b + a * xs[k])
        for k in range(len(xs))
        for a, b in [_line(xs[:k] + xs[k + 1 :], ys[:k] + ys[k + 1 :])]
    )
    centre = intercept + slope * math.log(folded_tokens)
    low_q, high_q = (RANGE_WIDENING * _quantile(errors, q) for q in RANGE_QUANTILES)
    return SummarySize(
        tokens=round(math.exp(centre)),
        low=round(math.exp(centre + min(low_q, 0.0))),
        high=round(math.exp(centre + max(high_q, 0.0))),
    )


def _line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Slope and intercept of ``ys`` on ``xs`` (least squares), the slope held to ``[0, 1]``."""
    if max(xs) - min(xs) < 1e-9:
        return 0.0, statistics.fmean(ys)
    slope, _ = statistics.linear_regression(xs, ys)
    slope = min(max(slope, 0.0), 1.0)  # a summary never shrinks as more is folded, nor outgrows it
    return slope, statistics.fmean(ys) - slope * statistics.fmean(xs)


def _quantile(ordered: list[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    below, above = math.floor(position), math.ceil(position)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)
