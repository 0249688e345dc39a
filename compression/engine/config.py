"""The compression settings of one agent, as plain values the engine and middleware read."""

from __future__ import annotations

from dataclasses import dataclass

from compression.engine.formats import DEFAULT_SUMMARY_PROMPT

DEFAULT_TOOL_ARG_MAX_LENGTH = 2000
DEFAULT_TOOL_RESULT_TOKEN_LIMIT = 300
DEFAULT_KEEP_MESSAGES = 10
DEFAULT_THRESHOLD_K = 100
# The agent capability that allows manual and bulk compression (admin checkbox, services, command).
COMPRESSION_CAPABILITY = "context_compression"


@dataclass(frozen=True)
class CompressionConfig:
    trigger_tokens: int  # T (SPEC §3), already capped by the context window
    keep_messages: int = DEFAULT_KEEP_MESSAGES
    summary_prompt: str = DEFAULT_SUMMARY_PROMPT
    tool_result_token_limit: int = DEFAULT_TOOL_RESULT_TOKEN_LIMIT  # 0: offload every tool result, no preview
    tool_arg_max_length: int = DEFAULT_TOOL_ARG_MAX_LENGTH
    context_window: int | None = None
    model_name: str | None = None  # picks the estimator profile
