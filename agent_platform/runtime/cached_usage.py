"""``ChatOpenAI`` that reads every provider's cached-prompt fields into the reply's ``usage_metadata``.

LangChain maps OpenAI's ``prompt_tokens_details.cached_tokens`` to ``input_token_details.cache_read``
itself; DeepSeek's ``prompt_cache_hit_tokens`` and Anthropic's ``cache_read_input_tokens`` /
``cache_creation_input_tokens`` (passed on by an OpenAI-compatible proxy) it leaves out. Both paths are
covered: a whole reply (``_create_chat_result``) and the usage chunk of a streamed one. The arithmetic is
the engine's (``context_engine.tokens.usage.with_provider_cache``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

from context_engine.tokens.usage import with_provider_cache


def _raw_usage(response: Any) -> Mapping[str, Any] | None:
    body = response if isinstance(response, Mapping) else response.model_dump()
    usage = body.get("usage")
    return usage if isinstance(usage, Mapping) else None


class CachedUsageChatOpenAI(ChatOpenAI):
    def _create_chat_result(self, response: Any, generation_info: dict | None = None) -> ChatResult:
        result = super()._create_chat_result(response, generation_info)
        raw = _raw_usage(response)
        for generation in result.generations:
            message = generation.message
            if raw and isinstance(message, AIMessage) and message.usage_metadata:
                message.usage_metadata = with_provider_cache(message.usage_metadata, raw)  # type: ignore[assignment]
        return result

    def _convert_chunk_to_generation_chunk(
        self, chunk: dict, default_chunk_class: type, base_generation_info: dict | None
    ) -> ChatGenerationChunk | None:
        generation = super()._convert_chunk_to_generation_chunk(
            chunk, default_chunk_class, base_generation_info
        )
        raw = chunk.get("usage")
        if generation is not None and isinstance(raw, Mapping):
            message = generation.message
            if isinstance(message, AIMessageChunk) and message.usage_metadata:
                message.usage_metadata = with_provider_cache(message.usage_metadata, raw)  # type: ignore[assignment]
        return generation
