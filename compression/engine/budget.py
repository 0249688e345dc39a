"""The one context-pressure budget (SPEC §3): the effective trigger T."""

from __future__ import annotations

TOKENS_PER_K = 1024
WINDOW_CAP_RATIO = 0.9


def effective_trigger(*, summary_threshold_k: int, context_window: int | None) -> int:
    """T = threshold × 1024, capped at 90% of the model's window when the admin's number exceeds it."""
    trigger = summary_threshold_k * TOKENS_PER_K
    if context_window and trigger > context_window * WINDOW_CAP_RATIO:
        return int(context_window * WINDOW_CAP_RATIO)
    return trigger
