"""The one writer of the stored calibration, and the in-memory calibration the middlewares of every
agent on that endpoint and model share in a process.

The arithmetic is pure (``context_engine.tokens.calibration``). In a run, ``TokenUsageMiddleware`` applies
each reading to the shared in-memory value at once (the next call's trigger decision uses it); the run
executor then reports it (``conversations.signals.run_usage_reported``) and :func:`calibration_record`
stores it, so every process reads it when it next builds a graph. No database write happens inside
the graph (its nodes may run on another thread than the run's connection).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from agent_platform.calibration.models import TokenCalibration
from agent_platform.calibration.selectors import calibration_for, calibration_key
from context_engine.lru import LRU
from context_engine.tokens.calibration import Calibration, CalibrationMemory

if TYPE_CHECKING:
    from agent_platform.models import Agent

SOURCES_PER_PROCESS = 256


def calibration_record(*, agent: Agent, estimated: int, reported: int | None) -> Calibration:
    """Apply one reading (our raw estimate of a request, the prompt tokens reported for it) to the
    stored calibration of ``agent``'s endpoint and model, under its row lock, so concurrent runs on
    them compose."""
    with transaction.atomic():
        row, _ = TokenCalibration.objects.select_for_update().get_or_create(**calibration_key(agent=agent))
        current = Calibration(row.factor, row.observations)
        updated = current.observe(estimated=estimated, reported=reported)
        if updated is not current:
            row.factor, row.observations = updated.factor, updated.observations
            row.save(update_fields=["factor", "observations", "updated_at"])
    return updated


_sources = LRU(SOURCES_PER_PROCESS)


def calibration_source_for(*, agent: Agent) -> CalibrationMemory:
    """The process's calibration of ``agent``'s endpoint and model (one object per endpoint, model and
    profile, shared by every middleware on them), set from the table: called when a graph is built."""
    key = tuple(calibration_key(agent=agent).values())
    source = _sources.get(key)
    if source is None:
        source = CalibrationMemory()
        _sources.put(key, source)
    source.set(calibration_for(agent=agent))
    return source
