"""LangChain v1 agent middleware that carries out the engine's decisions in the agent loop: automatic
compression (SPEC 6) and token-usage pressure figures (SPEC 7). Order in a stack: compression outside,
token usage inside."""

from context_engine.errors import CompressionError
from context_engine.middleware.compression import CompressionMiddleware
from context_engine.middleware.token_usage import TokenUsageMiddleware
from context_engine.state import CompressionState

__all__ = ["CompressionError", "CompressionMiddleware", "CompressionState", "TokenUsageMiddleware"]
