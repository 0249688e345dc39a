"""The one writer of the stored calibration, and the in-memory calibration the middlewares of every
agent on that model share in a process.

The arithmetic is pure (``context_engine.tokens.calibration``). In a run, ``TokenUsageMiddleware`` applies
each reading to the shared in-memory value at once (the next call's trigger decision uses it); the run
executor then reports it (``conversations.signals.run_usage_reported``) and :func:`calibration_record`
stores it, so every process reads it when it next builds a graph. No database write happens inside
the graph (its nodes may run on another thread than the run's connection).
"""

from __future__ import annotations

from django.db import transaction

from agent_platform.calibration.models import TokenCalibration
from agent_platform.calibration.selectors import calibration_for
from context_engine.lru import LRU
from context_engine.tokens.calibration import Calibration, CalibrationMemory
from context_engine.tokens.messages import model_key, profile_for_model

SOURCES_PER_PROCESS = 256


def calibration_record(*, model_name: str | None, estimated: int, reported: int | None) -> Calibration:
    """Apply one reading (our raw estimate of a request, the prompt tokens reported for it) to the
    model's stored calibration, under its row lock, so concurrent runs on a model compose."""
    key, profile = model_key(model_name), profile_for_model(model_name).name
    with transaction.atomic():
        row, _ = TokenCalibration.objects.select_for_update().get_or_create(model_key=key, profile=profile)
        current = Calibration(row.factor, row.observations)
        updated = current.observe(estimated=estimated, reported=reported)
        if updated is not current:
            row.factor, row.observations = updated.factor, updated.observations
            row.save(update_fields=["factor", "observations", "updated_at"])
    return updated


_sources = LRU(SOURCES_PER_PROCESS)


def calibration_source_for(model_name: str | None) -> CalibrationMemory:
    """The process's calibration of ``model_name`` (one object per model and profile, shared by every
    middleware on it), set from the table: called when a graph is built."""
    key = (model_key(model_name), profile_for_model(model_name).name)
    source = _sources.get(key)
    if source is None:
        source = CalibrationMemory()
        _sources.put(key, source)
    source.set(calibration_for(model_name=model_name))
    return source
