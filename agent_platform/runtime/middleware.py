"""Building the two middlewares for an ``Agent`` (admin configuration) and a thread's workdir."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel

from context_engine.middleware.compression import CompressionMiddleware
from context_engine.middleware.token_usage import TokenUsageMiddleware
from context_engine.store import ResultStore
from context_engine.summary.spend_guard import LedgerSource
from context_engine.tokens.calibration import CalibrationSource
from context_engine.tokens.messages import profile_for_model

if TYPE_CHECKING:
    from agent_platform.models import Agent


def compression_middleware_for(
    *,
    agent: Agent,
    workdir: ResultStore,
    model: BaseChatModel,
    calibration: CalibrationSource | None = None,
    ledger: LedgerSource | None = None,
    **_: Any,
) -> CompressionMiddleware:
    """Compression for ``agent``: its config, the profile and the calibration of its model;
    summaries by ``model`` (the agent's own chat model); files in the thread's ``workdir`` (shared
    with sub-agents). The thread's pinned messages come with each run's config
    (``PINNED_IDS_CONFIG_KEY``)."""
    return CompressionMiddleware(
        config=agent.compression_config(),
        store=workdir,
        summary_model=model,
        profile=profile_for_model(agent.resolved_model_name),
        calibration=calibration,
        ledger=ledger,
    )


def token_usage_middleware_for(
    *, agent: Agent, calibration: CalibrationSource | None = None, **_: Any
) -> TokenUsageMiddleware:
    """Pressure figures and stored estimates; reported usage updates ``calibration`` (pass the
    compression middleware's, so a run's trigger decisions see its own readings)."""
    return TokenUsageMiddleware(
        config=agent.compression_config(),
        profile=profile_for_model(agent.resolved_model_name),
        calibration=calibration,
    )
