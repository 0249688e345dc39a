"""LangChain v1 agent middleware around the compression engine: automatic compression (SPEC 6) and
token-usage pressure figures (SPEC 7). Order in a stack: compression outside, token usage inside."""

from compression.agent_middleware.compression import CompressionError, CompressionMiddleware
from compression.agent_middleware.events import EVENT_TYPE
from compression.agent_middleware.factories import compression_middleware_for, token_usage_middleware_for
from compression.agent_middleware.state import CompressionState, merge_token_usage
from compression.agent_middleware.token_usage import TokenUsageMiddleware

__all__ = [
    "EVENT_TYPE",
    "CompressionError",
    "CompressionMiddleware",
    "CompressionState",
    "TokenUsageMiddleware",
    "compression_middleware_for",
    "merge_token_usage",
    "token_usage_middleware_for",
]
