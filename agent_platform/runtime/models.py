"""The chat-model factory: an agent's admin configuration in, a LangChain chat model out."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable

import httpx
from django.conf import settings
from django.core.cache import cache
from django.utils.translation import gettext as _
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage

from agent_platform.errors import ApplicationError
from agent_platform.key_bindings import Origin, binding_error, url_origin
from agent_platform.models import Agent, ModelEndpoint, key_env_error
from agent_platform.observability.metrics import SUMMARY_CALL_METRICS
from agent_platform.runtime.model_http import StoppableTransport
from agent_platform.runtime.offline import OfflineChatModel

# A self-hosted OpenAI-compatible server (vLLM, Ollama, llama.cpp) usually accepts any key.
PLACEHOLDER_API_KEY = "not-needed"
MODEL_MAX_RETRIES = 2
# Asking an endpoint for its models (the admin's model field): short, and remembered for a while.
MODEL_LIST_TIMEOUT = 5.0
MODEL_LIST_CACHE_SECONDS = 300
MODEL_LIST_MAX = 500


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
        # A run's call through a transport Stop closes (``model_http``); any other call as usual.
        httpx.Client(follow_redirects=True, event_hooks={"request": [check]}, transport=StoppableTransport()),
        httpx.AsyncClient(follow_redirects=True, event_hooks={"request": [acheck]}),
    )


class EndpointModelsUnavailable(ApplicationError):
    """The endpoint could not say which models it serves (unreachable, refused, or not the protocol)."""

    status = 502
    code = "endpoint_unavailable"


def endpoint_models(endpoint: ModelEndpoint, *, refresh: bool = False) -> list[str]:
    """The model ids ``endpoint`` lists at ``GET /models``, sorted; remembered for a few minutes.

    The key is the endpoint's own (``endpoint_api_key``) and goes only to its URL, as for a chat; the
    ids are all that leaves this function. Raises ``EndpointModelsUnavailable`` with a readable reason.
    """
    base_url = endpoint.base_url.rstrip("/")
    key = (
        "endpoint-models:"
        + hashlib.sha256(f"{endpoint.pk}|{base_url}|{endpoint.api_key_env}".encode()).hexdigest()
    )
    if not refresh and (known := cache.get(key)) is not None:
        return known

    from openai import APIConnectionError, APIStatusError, APITimeoutError, OpenAI, OpenAIError

    try:
        client = OpenAI(
            base_url=base_url, api_key=endpoint_api_key(endpoint), timeout=MODEL_LIST_TIMEOUT, max_retries=0
        )
        ids = sorted({str(model.id) for model in client.models.list() if getattr(model, "id", None)})
    except ModelConfigurationError as exc:
        raise EndpointModelsUnavailable(str(exc)) from exc
    except APITimeoutError as exc:
        raise EndpointModelsUnavailable(
            _("%(url)s/models did not answer within %(seconds)s s.")
            % {"url": base_url, "seconds": f"{MODEL_LIST_TIMEOUT:g}"}
        ) from exc
    except APIConnectionError as exc:
        raise EndpointModelsUnavailable(
            _("%(url)s/models could not be reached.") % {"url": base_url}
        ) from exc
    except APIStatusError as exc:
        raise EndpointModelsUnavailable(
            _("%(url)s/models answered HTTP %(status)s.") % {"url": base_url, "status": exc.status_code}
        ) from exc
    except (OpenAIError, ValueError, TypeError, AttributeError) as exc:
        raise EndpointModelsUnavailable(
            _("%(url)s/models did not answer with a model list.") % {"url": base_url}
        ) from exc
    if not ids:  # an empty list would refuse every name: treat it as not knowing
        raise EndpointModelsUnavailable(_("%(url)s/models listed no models.") % {"url": base_url})
    ids = ids[:MODEL_LIST_MAX]
    cache.set(key, ids, MODEL_LIST_CACHE_SECONDS)
    return ids


def chat_model_for(agent: Agent) -> BaseChatModel:
    """The agent's chat model: ``ChatOpenAI`` against its endpoint, or the offline model."""
    window = agent.resolved_context_window
    profile = {"max_input_tokens": window} if window else None
    endpoint = agent.endpoint
    if endpoint is None:
        return OfflineChatModel(profile=profile, callbacks=[SUMMARY_CALL_METRICS])

    # Slow to import (langchain_openai): only runs that use an endpoint pay for it.
    from agent_platform.runtime.cached_usage import CachedUsageChatOpenAI

    api_key = endpoint_api_key(endpoint)
    origin = url_origin(endpoint.base_url)
    if origin is None:
        raise ModelConfigurationError(
            f"Endpoint {endpoint.name!r}: {endpoint.base_url!r} is not an http(s) URL."
        )
    http_client, http_async_client = _pinned_clients(origin)
    return CachedUsageChatOpenAI(
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


def model_in_language(model: BaseChatModel, *, language: str) -> BaseChatModel:
    """``model`` answering in ``language`` (the page's) where it can choose: the offline model speaks
    through the project's catalog; a real model follows the user's own words."""
    if isinstance(model, OfflineChatModel) and language:
        return model.model_copy(update={"language": language})
    return model


def local_summarizer_for(agent: Agent) -> Callable[[str], AIMessage] | None:
    """The agent's summarizer as a plain function (summary prompt in, reply out) when it is local code:
    the offline model, free and deterministic, so a preview may compute the summary instead of
    estimating it (``context_engine.manual.exact_size``). None for a provider's model: that one is
    called only when a compression is applied."""
    if agent.endpoint_id is not None:  # a provider: not even its client is made here
        return None
    model = chat_model_for(agent)
    if not isinstance(model, OfflineChatModel):  # a stand-in (tests) is a model to call, not code to run
        return None
    return lambda prompt: model.reply([HumanMessage(prompt)])
