"""LangChain v1 agent middleware around the compression engine: automatic compression (SPEC 6) and
token-usage pressure figures (SPEC 7). Order in a stack: compression outside, token usage inside."""

from compression.agent_middleware.compression import CompressionError, CompressionMiddleware
from compression.agent_middleware.factories import compression_middleware_for, token_usage_middleware_for
from compression.agent_middleware.state import CompressionState
from compression.agent_middleware.token_usage import TokenUsageMiddleware

__all__ = [
    "CompressionError",
    "CompressionMiddleware",
    "CompressionState",
    "TokenUsageMiddleware",
    "compression_middleware_for",
    "token_usage_middleware_for",
]
