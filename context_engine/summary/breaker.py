"""The summary circuit breaker (issue 37 item 1): after ``refusals`` refused model summaries within
``window``, the platform stops asking the model for ``cooldown`` after the latest one and writes the
extractive summary directly. Kept in the thread's state beside the spend guard's ledger, as a list of
refusals (``{"at": iso, "code": why}``); an accepted model summary clears it. Pure: the list and the
limits in, a decision out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from context_engine.config import BreakerLimits
from context_engine.summary.spend_guard import parse_time

MAX_REMEMBERED = 50


def recent_refusals(
    history: Iterable[Mapping[str, Any]] | None, *, limits: BreakerLimits, now: datetime
) -> list[dict[str, Any]]:
    """The well-formed refusals of ``history`` within the window, oldest first."""
    window = timedelta(seconds=limits.window_seconds)
    kept = []
    for entry in history or ():
        at = parse_time(entry.get("at")) if isinstance(entry, Mapping) else None
        if at is not None and now - window < at <= now:
            kept.append({"at": at.isoformat(), "code": str(entry.get("code") or "")})
    return sorted(kept, key=lambda e: e["at"])


def paused_until(
    history: Iterable[Mapping[str, Any]] | None, *, limits: BreakerLimits, now: datetime
) -> datetime | None:
    """Until when model summaries are paused (None: ask the model): ``limits.refusals`` refusals within
    the window, the latest less than the cooldown ago."""
    if limits.refusals <= 0:
        return None
    refusals = recent_refusals(history, limits=limits, now=now)
    if len(refusals) < limits.refusals:
        return None
    until = datetime.fromisoformat(refusals[-1]["at"]) + timedelta(seconds=limits.cooldown_seconds)
    return until if now < until else None


def record_refusal(
    history: Iterable[Mapping[str, Any]] | None, *, code: str, limits: BreakerLimits, now: datetime
) -> list[dict[str, Any]]:
    """``history`` (within the window) plus a refusal now: the value to write back to state."""
    kept = recent_refusals(history, limits=limits, now=now)
    return [*kept, {"at": now.isoformat(), "code": code}][-MAX_REMEMBERED:]
