"""The chat-model factory: an agent's admin configuration in, a LangChain chat model out."""

from __future__ import annotations

import functools
import os

import httpx
from django.conf import settings
from langchain_core.language_models.chat_models import BaseChatModel

from agent_platform.errors import ApplicationError
from agent_platform.key_bindings import Origin, binding_error, url_origin
from agent_platform.models import Agent, ModelEndpoint, key_env_error
from agent_platform.observability.metrics import SUMMARY_CALL_METRICS
from agent_platform.runtime.offline import OfflineChatModel

# A self-hosted OpenAI-compatible server (vLLM, Ollama, llama.cpp) usually accepts any key.
PLACEHOLDER_API_KEY = "not-needed"
MODEL_MAX_RETRIES = 2


class ModelConfigurationError(ApplicationError):
    status = 422
    code = "model_misconfigured"


def endpoint_api_key(endpoint: ModelEndpoint) -> str:
    """The key to send to ``endpoint`` (and nowhere else): the value of its own variable, checked
    against the allow-list again at use, so a row written around the admin cannot name a secret."""
    if not endpoint.api_key_env:
        return PLACEHOLDER_API_KEY
    if problem := key_env_error(endpoint.api_key_env):
        raise ModelConfigurationError(f"Endpoint {endpoint.name!r}: {problem}")
    # Checked again at use: the URL may have changed since the row was saved, or the bindings since.
    if problem := binding_error(key_env=endpoint.api_key_env, url=endpoint.base_url):
        raise ModelConfigurationError(f"Endpoint {endpoint.name!r}: {problem}")
    key = os.environ.get(endpoint.api_key_env, "")
    if not key:
        raise ModelConfigurationError(
            f"Endpoint {endpoint.name!r} has no key: set the environment variable {endpoint.api_key_env}, "
            "or clear the variable name for a server that needs none."
        )
    return key


class OriginLeftError(httpx.RequestError):
    """A request (a redirect hop included) to another origin than the endpoint's: never sent."""


def _stay_on(origin: Origin):
    def check(request: httpx.Request) -> None:
        if url_origin(str(request.url)) != origin:
            raise OriginLeftError(f"refused to leave {origin} for {request.url.scheme}://{request.url.host}")

    return check


@functools.lru_cache(maxsize=64)
def _pinned_clients(origin: Origin) -> tuple[httpx.Client, httpx.AsyncClient]:
    """HTTP clients that send to ``origin`` only: a redirect elsewhere is refused before it is followed,
    so neither the key nor the conversation leaves for another host. One pair per origin (pooled)."""
    check = _stay_on(origin)

    async def acheck(request: httpx.Request) -> None:
        check(request)

    return (
        httpx.Client(follow_redirects=True, event_hooks={"request": [check]}),
        httpx.AsyncClient(follow_redirects=True, event_hooks={"request": [acheck]}),
    )


def chat_model_for(agent: Agent) -> BaseChatModel:
    """The agent's chat model: ``ChatOpenAI`` against its endpoint, or the offline model."""
    window = agent.resolved_context_window
    profile = {"max_input_tokens": window} if window else None
    endpoint = agent.endpoint
    if endpoint is None:
        return OfflineChatModel(profile=profile, callbacks=[SUMMARY_CALL_METRICS])

    from langchain_openai import ChatOpenAI  # slow to import; only runs that use an endpoint pay for it

    api_key = endpoint_api_key(endpoint)
    origin = url_origin(endpoint.base_url)
    if origin is None:
        raise ModelConfigurationError(
            f"Endpoint {endpoint.name!r}: {endpoint.base_url!r} is not an http(s) URL."
        )
    http_client, http_async_client = _pinned_clients(origin)
    return ChatOpenAI(
        model=agent.resolved_model_name,
        # The key and the URL come from the same row: a key never leaves for another host.
        base_url=endpoint.base_url,
        api_key=api_key,
        http_client=http_client,
        http_async_client=http_async_client,
        temperature=agent.temperature,
        timeout=settings.MODEL_REQUEST_TIMEOUT,
        max_retries=MODEL_MAX_RETRIES,
        stream_usage=True,
        profile=profile,
        callbacks=[SUMMARY_CALL_METRICS],
    )
