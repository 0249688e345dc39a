"""Receivers of other apps' hooks, connected in ``CompressionConfig.ready()``."""

from __future__ import annotations

from typing import Any

from compression.services.records import compression_record_from_event
from conversations.models import AgentRun


def record_run_compression(sender: Any, *, run: AgentRun, event: dict[str, Any], **kwargs: Any) -> None:
    """The audit record of an automatic compression a run just reported."""
    compression_record_from_event(run=run, event=event)
