"""Reads of the stored calibration, and the one place its key is computed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_platform.calibration.models import TokenCalibration
from context_engine.tokens.calibration import NEUTRAL, Calibration
from context_engine.tokens.messages import model_key, profile_for_model

if TYPE_CHECKING:
    from agent_platform.models import Agent


def calibration_key(*, agent: Agent) -> dict[str, str]:
    """The row an agent's calibration lives in: its endpoint (by base URL: one misreporting proxy must
    not move the agents on another server), its model (as the known-models table reads it) and the
    estimator profile of that model. The offline agent has no endpoint: ``""``."""
    model_name = agent.resolved_model_name
    endpoint = agent.endpoint.base_url.rstrip("/") if agent.endpoint is not None else ""
    return {
        "endpoint_key": endpoint,
        "model_key": model_key(model_name),
        "profile": profile_for_model(model_name).name,
    }


def calibration_for(*, agent: Agent) -> Calibration:
    """The stored calibration of ``agent``'s endpoint and model (neutral until it reports usage)."""
    row = (
        TokenCalibration.objects.filter(**calibration_key(agent=agent))
        .values_list("factor", "observations")
        .first()
    )
    return Calibration(*row) if row else NEUTRAL
