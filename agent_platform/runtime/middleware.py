"""Building the two middlewares for an ``Agent`` (admin configuration) and a thread's workdir."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.language_models.chat_models import BaseChatModel

from context_engine.middleware.compression import CompressionMiddleware
from context_engine.middleware.token_usage import TokenUsageMiddleware
from context_engine.store import ResultStore
from context_engine.summary.spend_guard import LedgerSource
from context_engine.tokens.calibration import CalibrationSource

if TYPE_CHECKING:
    from agent_platform.models import Agent


def compression_middleware_for(
    *,
    agent: Agent,
    workdir: ResultStore,
    model: BaseChatModel,
    calibration: CalibrationSource | None = None,
    ledger: LedgerSource | None = None,
) -> CompressionMiddleware:
    """Compression for ``agent``: its config, the profile and the calibration of its model;
    summaries by ``model`` (the agent's own chat model); files in the thread's ``workdir`` (shared
    with sub-agents). The thread's pinned messages come with each run's config
    (``PINNED_IDS_CONFIG_KEY``)."""
    return CompressionMiddleware(
        config=agent.compression_config(),
        store=workdir,
        summary_model=model,
        calibration=calibration,
        ledger=ledger,
    )


def token_usage_middleware_for(
    *, agent: Agent, calibration: CalibrationSource | None = None
) -> TokenUsageMiddleware:
    """Pressure figures and stored estimates; reported usage updates ``calibration`` (pass the
    compression middleware's, so a run's trigger decisions see its own readings)."""
    return TokenUsageMiddleware(
        config=agent.compression_config(),
        calibration=calibration,
    )
