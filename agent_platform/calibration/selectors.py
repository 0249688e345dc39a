"""Reads of the stored calibration."""

from __future__ import annotations

from agent_platform.calibration.models import TokenCalibration
from context_engine.tokens.calibration import NEUTRAL, Calibration
from context_engine.tokens.messages import model_key, profile_for_model


def calibration_for(*, model_name: str | None) -> Calibration:
    """The stored calibration of ``model_name`` under its profile (neutral until it reports usage)."""
    row = (
        TokenCalibration.objects.filter(
            model_key=model_key(model_name), profile=profile_for_model(model_name).name
        )
        .values_list("factor", "observations")
        .first()
    )
    return Calibration(*row) if row else NEUTRAL
