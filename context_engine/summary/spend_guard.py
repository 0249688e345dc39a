"""The spend guard (issue 14 item 4): at most N summary calls per thread per rolling hour, and at most
so many summary input tokens in that hour. Pure: the thread's recent summary calls (kept in the agent
state) and the limits in, a decision out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

WINDOW = timedelta(hours=1)
MAX_REMEMBERED_CALLS = 200  # bound on the state list, whatever the limits are

REASON_CALLS = "summary_calls_per_hour"
REASON_TOKENS = "summary_input_tokens_per_hour"


@dataclass(frozen=True)
class SpendLimits:
    max_calls_per_hour: int = 0  # 0: no limit
    max_input_tokens_per_hour: int = 0  # 0: no limit

    @property
    def active(self) -> bool:
        return self.max_calls_per_hour > 0 or self.max_input_tokens_per_hour > 0


@dataclass(frozen=True)
class GuardDecision:
    allowed: bool
    reason: str | None = None  # REASON_CALLS | REASON_TOKENS when held back
    calls_in_window: int = 0
    input_tokens_in_window: int = 0
    retry_at: datetime | None = None  # when the oldest counted call leaves the window

    def as_dict(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed,
            "reason": self.reason,
            "calls_in_window": self.calls_in_window,
            "input_tokens_in_window": self.input_tokens_in_window,
            "retry_at": self.retry_at.isoformat() if self.retry_at else None,
        }


def _parse(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


def recent_calls(history: Iterable[Mapping[str, Any]] | None, *, now: datetime) -> list[dict[str, Any]]:
    """The well-formed calls of ``history`` made within the last hour, oldest first."""
    calls: list[dict[str, Any]] = []
    for call in history or ():
        if not isinstance(call, Mapping):
            continue
        at = _parse(call.get("at"))
        tokens = call.get("input_tokens")
        if at is None or not now - WINDOW < at <= now:
            continue
        calls.append(
            {"at": at.isoformat(), "input_tokens": tokens if isinstance(tokens, int) and tokens > 0 else 0}
        )
    calls.sort(key=lambda c: c["at"])
    return calls


def guard_check(
    history: Iterable[Mapping[str, Any]] | None,
    *,
    limits: SpendLimits,
    now: datetime,
    input_tokens: int,
) -> GuardDecision:
    """May one more summary call with ``input_tokens`` of input go out now?"""
    calls = recent_calls(history, now=now)
    spent = sum(c["input_tokens"] for c in calls)
    retry_at = _parse(calls[0]["at"]) + WINDOW if calls else None
    if limits.max_calls_per_hour > 0 and len(calls) >= limits.max_calls_per_hour:
        return GuardDecision(False, REASON_CALLS, len(calls), spent, retry_at)
    if (
        limits.max_input_tokens_per_hour > 0
        and spent + max(input_tokens, 0) > limits.max_input_tokens_per_hour
    ):
        return GuardDecision(False, REASON_TOKENS, len(calls), spent, retry_at)
    return GuardDecision(True, None, len(calls), spent, None)


def record_call(
    history: Iterable[Mapping[str, Any]] | None, *, now: datetime, input_tokens: int
) -> list[dict[str, Any]]:
    """``history`` (last hour only) plus this call: the value to write back to state."""
    calls = recent_calls(history, now=now)
    calls.append({"at": now.isoformat(), "input_tokens": max(int(input_tokens), 0)})
    return calls[-MAX_REMEMBERED_CALLS:]
