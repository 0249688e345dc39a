"""Receivers of other apps' hooks, connected in ``CompressionConfig.ready()``."""

from __future__ import annotations

from typing import Any

from agent_platform.calibration.services import calibration_record
from compression.services.records import compression_record_from_event
from conversations.models import AgentRun


def record_run_compression(sender: Any, *, run: AgentRun, event: dict[str, Any], **kwargs: Any) -> None:
    """The audit record of an automatic compression a run just reported."""
    compression_record_from_event(run=run, event=event)


def record_usage_reading(sender: Any, *, run: AgentRun, estimated: int, reported: int, **kwargs: Any) -> None:
    """A reported prompt-token count, against our estimate of the same request: the model's calibration."""
    calibration_record(
        model_name=run.conversation.agent.resolved_model_name, estimated=estimated, reported=reported
    )
