"""The chat-model factory: an agent's admin configuration in, a LangChain chat model out."""

from __future__ import annotations

import os

from django.conf import settings
from langchain_core.language_models.chat_models import BaseChatModel

from agent_platform.errors import ApplicationError
from agent_platform.models import Agent
from agent_platform.runtime.offline import OfflineChatModel

# A self-hosted OpenAI-compatible server (vLLM, Ollama, llama.cpp) usually accepts any key.
PLACEHOLDER_API_KEY = "not-needed"
MODEL_MAX_RETRIES = 2


class ModelConfigurationError(ApplicationError):
    status = 422
    code = "model_misconfigured"


def chat_model_for(agent: Agent) -> BaseChatModel:
    """The agent's chat model: ``ChatOpenAI`` against its endpoint, or the offline model."""
    profile = {"max_input_tokens": agent.resolved_context_window} if agent.resolved_context_window else None
    if agent.provider != Agent.Provider.OPENAI:
        return OfflineChatModel(profile=profile)

    from langchain_openai import ChatOpenAI

    base_url = agent.base_url or settings.OPENAI_BASE_URL or None
    api_key = os.environ.get(agent.api_key_env or "", "") or settings.OPENAI_API_KEY
    if not api_key:
        if not base_url:
            raise ModelConfigurationError(
                f"Agent {agent.slug!r} has no API key: set the environment variable "
                f"{agent.api_key_env or 'OPENAI_API_KEY'} or give it a base URL of a server that needs none."
            )
        api_key = PLACEHOLDER_API_KEY
    return ChatOpenAI(
        model=agent.model_name,
        base_url=base_url,
        api_key=api_key,
        temperature=agent.temperature,
        timeout=settings.MODEL_REQUEST_TIMEOUT,
        max_retries=MODEL_MAX_RETRIES,
        stream_usage=True,
        profile=profile,
    )
