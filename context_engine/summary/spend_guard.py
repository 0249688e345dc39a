"""The spend guard (issue 14 item 4): at most N summary calls per thread per rolling hour, and at most
so many summary input tokens in that hour. Pure: the thread's recent summary calls (kept in the agent
state) and the limits in, a decision out. Every call a provider bills counts, a failed one included.

A sub-agent (the ``task`` tool) shares its parent thread's ledger. It keeps no state that outlives it,
and a tool cannot read the parent's private state nor write it safely (parallel ``task`` calls would
write the key twice in one step), so the parent's graph holds one :class:`SharedLedger`: the parent's
middleware shows it the thread's ledger at every model call and writes back the sub-agents' calls made
since (``absorb``); each sub-agent counts the thread's calls plus those pending (``lend``) and adds its
own. Both guards therefore see every call; a call made by a sub-agent reaches the checkpoint with the
parent's next model call (a process that dies before then loses it).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from context_engine.config import SpendLimits
from context_engine.state import SUMMARY_CALLS_KEY

WINDOW = timedelta(hours=1)
MAX_REMEMBERED_CALLS = 200  # bound on the state list, whatever the limits are

REASON_CALLS = "summary_calls_per_hour"
REASON_TOKENS = "summary_input_tokens_per_hour"


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


def parse_time(value: Any) -> datetime | None:
    """A ledger entry's time (a datetime, or its ISO text), else None."""
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
        at = parse_time(call.get("at"))
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
    oldest = parse_time(calls[0]["at"]) if calls else None  # recent_calls wrote it: never None when calls
    retry_at = oldest + WINDOW if oldest is not None else None
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
    calls.append(_entry(input_tokens, now))
    return calls[-MAX_REMEMBERED_CALLS:]


Ledger = list[dict[str, Any]]


class LedgerSource(Protocol):
    """Where an agent's compression middleware keeps the thread's ledger."""

    def enter(self, ledger: Iterable[Mapping[str, Any]] | None, *, now: datetime) -> tuple[Any, bool]:
        """The ledger to count, from the agent's own state's ``ledger``; True when the agent must write
        it back to its state."""
        ...

    def spent(self, calls: Sequence[int], *, now: datetime) -> None:
        """The agent just made summary calls of these input tokens (its state update records them)."""
        ...


class OwnState:
    """The default: the agent's own state is the thread's ledger."""

    def enter(self, ledger: Iterable[Mapping[str, Any]] | None, *, now: datetime) -> tuple[Any, bool]:
        return ledger, False

    def spent(self, calls: Sequence[int], *, now: datetime) -> None:
        return None


class SharedLedger:
    """The parent's side of a thread's ledger shared with its sub-agents (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: Ledger = []  # the parent's ledger as its latest model call saw it
        self._pending: Ledger = []  # sub-agents' calls not yet in the parent's state
        self._made: Ledger = []  # every call of this run, the parent's and its sub-agents' (``made``)

    def enter(self, ledger: Iterable[Mapping[str, Any]] | None, *, now: datetime) -> tuple[Ledger, bool]:
        return self.absorb(ledger, now=now)

    def spent(self, calls: Sequence[int], *, now: datetime) -> None:
        """The parent's own calls go to its state with its model call's update; they are also kept
        here, for a run that fails before that update is saved (``made``)."""
        with self._lock:
            self._made.extend(_entry(tokens, now) for tokens in calls)

    def made(self) -> Ledger:
        """Every summary call made in this run, in the entries the state's ledger holds: what the run's
        end writes to the checkpoint when its own updates were lost (``ledger_merge``)."""
        with self._lock:
            return list(self._made)

    def absorb(self, ledger: Iterable[Mapping[str, Any]] | None, *, now: datetime) -> tuple[Ledger, bool]:
        """The thread's ledger (the parent's state's, plus the sub-agents' calls made since it last
        looked), and whether there were any such calls to write."""
        with self._lock:
            pending, self._pending = self._pending, []
            self._thread = recent_calls([*(ledger or ()), *pending], now=now)[-MAX_REMEMBERED_CALLS:]
            return list(self._thread), bool(pending)

    def lend(self) -> LentLedger:
        return LentLedger(self)

    def view(self) -> Ledger:
        """The thread's calls and the pending ones."""
        with self._lock:
            return [*self._thread, *self._pending]

    def add(self, calls: Sequence[int], *, now: datetime) -> None:
        with self._lock:
            entries = [_entry(tokens, now) for tokens in calls]
            self._pending.extend(entries)
            self._made.extend(entries)


def _entry(tokens: int, now: datetime) -> dict[str, Any]:
    """A call as the ledger holds it (``record_call`` writes the same)."""
    return {"at": now.isoformat(), "input_tokens": max(int(tokens), 0)}


def ledger_merge(
    ledger: Iterable[Mapping[str, Any]] | None, made: Iterable[Mapping[str, Any]], *, now: datetime
) -> Ledger | None:
    """The thread's ledger with the calls ``made`` it lacks (each call as often as the more of the two
    counts it: a call the state already holds is not counted twice), or None when it lacks none."""
    recent = recent_calls(ledger, now=now)
    held = Counter((c["at"], c["input_tokens"]) for c in recent)
    missing = Counter((c["at"], c["input_tokens"]) for c in recent_calls(made, now=now)) - held
    if not missing:
        return None
    added = [{"at": at, "input_tokens": tokens} for (at, tokens), n in missing.items() for _ in range(n)]
    return sorted([*recent, *added], key=lambda c: c["at"])[-MAX_REMEMBERED_CALLS:]


class LentLedger:
    """A sub-agent's side: it counts the thread's calls and the pending ones, and adds its own."""

    def __init__(self, shared: SharedLedger) -> None:
        self._shared = shared

    def enter(self, ledger: Iterable[Mapping[str, Any]] | None, *, now: datetime) -> tuple[Ledger, bool]:
        return recent_calls(self._shared.view(), now=now), False

    def spent(self, calls: Sequence[int], *, now: datetime) -> None:
        self._shared.add(calls, now=now)


def thread_ledger(
    source: LedgerSource, state: Mapping[str, Any], *, now: datetime
) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """``state`` with the thread's ledger (from ``source``) in it, and the update writing it back to the
    agent's state when it took in sub-agents' calls."""
    own = state.get(SUMMARY_CALLS_KEY)
    ledger, write = source.enter(own, now=now)
    if ledger is own:
        return state, {}
    return {**state, SUMMARY_CALLS_KEY: ledger}, ({SUMMARY_CALLS_KEY: ledger} if write else {})
