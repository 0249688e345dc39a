"""The one writer of the stored calibration, and the in-memory calibration the middlewares of every
agent on that endpoint and model share in a process.

The arithmetic is pure (``context_engine.tokens.calibration``). In a run, ``TokenUsageMiddleware`` applies
each reading to the shared in-memory value at once (the next call's trigger decision uses it); the run
executor then reports it (``conversations.signals.run_usage_reported``) and :func:`calibration_record`
stores it with the process's next batch, so every process reads it when it next builds a graph. No database write happens inside
the graph (its nodes may run on another thread than the run's connection).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connections, transaction

from agent_platform.calibration.models import TokenCalibration
from agent_platform.calibration.selectors import calibration_for, calibration_key
from context_engine.lru import LRU
from context_engine.tokens.calibration import Calibration, CalibrationMemory

if TYPE_CHECKING:
    from agent_platform.models import Agent

logger = logging.getLogger(__name__)

SOURCES_PER_PROCESS = 256


Reading = tuple[int, int | None]  # (our raw estimate of a request, the prompt tokens reported for it)
# Readings wait in this process at most this long (or until there are FLUSH_READINGS of them): one row
# lock per endpoint and model per batch, not one per model call shared by every thread. A process that
# dies loses at most these seconds of readings; the factor only moves a bounded step a reading anyway.
FLUSH_READINGS = 64
_pending: dict[tuple[tuple[str, str], ...], list[Reading]] = {}
_pending_lock = threading.Lock()
_flush_timer: threading.Timer | None = None


def calibration_record(*, agent: Agent, estimated: int, reported: int | None) -> None:
    """Take one reading for the stored calibration of ``agent``'s endpoint and model: stored with the
    next batch (within ``CALIBRATION_FLUSH_SECONDS``), at once when that setting is 0."""
    global _flush_timer
    key = tuple(calibration_key(agent=agent).items())
    with _pending_lock:
        _pending.setdefault(key, []).append((estimated, reported))
        due = settings.CALIBRATION_FLUSH_SECONDS <= 0 or sum(map(len, _pending.values())) >= FLUSH_READINGS
        if not due and _flush_timer is None:
            _flush_timer = threading.Timer(settings.CALIBRATION_FLUSH_SECONDS, _flush_off_thread)
            _flush_timer.daemon = True
            _flush_timer.start()
    if due:
        calibration_flush()


def calibration_flush() -> int:
    """Store every reading this process holds, each endpoint and model under its row lock, so
    concurrent processes compose; applied one by one in order, with the same bounds as ever. Returns
    how many readings were stored."""
    global _flush_timer
    with _pending_lock:
        batch = dict(_pending)
        _pending.clear()
        if _flush_timer is not None:
            _flush_timer.cancel()
            _flush_timer = None
    for key, readings in batch.items():
        with transaction.atomic():
            row, _ = TokenCalibration.objects.select_for_update().get_or_create(**dict(key))
            updated = _applied(Calibration(row.factor, row.observations), readings)
            row.factor, row.observations = updated.factor, updated.observations
            row.save(update_fields=["factor", "observations", "updated_at"])
    return sum(map(len, batch.values()))


def _applied(calibration: Calibration, readings: list[Reading]) -> Calibration:
    for estimated, reported in readings:
        calibration = calibration.observe(estimated=estimated, reported=reported)
    return calibration


def _flush_off_thread() -> None:
    try:
        calibration_flush()
    except Exception:  # noqa: BLE001 - the readings of one batch are not worth a crash
        logger.exception("Storing the calibration readings failed")
    finally:
        connections.close_all()  # the timer thread's own connection never outlives the flush


_sources = LRU(SOURCES_PER_PROCESS)


def calibration_source_for(*, agent: Agent) -> CalibrationMemory:
    """The process's calibration of ``agent``'s endpoint and model (one object per endpoint, model and
    profile, shared by every middleware on them), set from the table at most every
    ``CALIBRATION_FLUSH_SECONDS`` (every run asks): other processes store their readings no more often,
    and this process's own are in the object already (the middleware applies each one at once)."""
    row_key = calibration_key(agent=agent)
    key = tuple(row_key.values())
    entry = _sources.get(key)
    now = time.monotonic()
    if entry is not None and now - entry[1] < settings.CALIBRATION_FLUSH_SECONDS:
        return entry[0]
    source = entry[0] if entry is not None else CalibrationMemory()
    _sources.put(key, (source, now))
    with _pending_lock:  # readings of this process not stored yet count too
        waiting = list(_pending.get(tuple(row_key.items()), ()))
    source.set(_applied(calibration_for(agent=agent), waiting))
    return source
