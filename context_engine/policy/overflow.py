"""Context-overflow classification: is this model-call exception "the prompt is too long"? And what the
run says when a request cannot be made to fit.

Covers langchain-core's ``ContextOverflowError``, OpenAI-protocol errors whose ``code`` (or body
``error.code``/``type``) says so (openai 3.x keeps the code out of the message, so string checks
miss it), and the messages of common OpenAI-compatible servers. Walks ``__cause__``/``__context__``
so wrapped errors are found. Pure: no network.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.exceptions import ContextOverflowError

try:  # openai is a dependency of the platform, but the engine does not need it to import
    from openai import APIError as _OpenAIAPIError
except ImportError:  # pragma: no cover
    _OpenAIAPIError = None  # type: ignore[assignment,misc]

OVERFLOW_CODES = frozenset(
    {
        "context_length_exceeded",  # OpenAI, vLLM, DeepSeek, most OpenAI-compatible servers
        "context_window_exceeded",
        "exceed_context_size_error",  # llama.cpp server
        "model_context_window_exceeded",
    }
)
# Phrases specific enough to classify any exception in the chain.
OVERFLOW_PHRASES = (
    "context_length_exceeded",
    "maximum context length",  # OpenAI / vLLM / DeepSeek: "This model's maximum context length is ..."
    "exceeds the available context size",  # llama.cpp
    "exceed_context_size_error",
    "prompt is too long",  # Anthropic, langchain-openai's own check
    "prompt too long",  # Ollama
    "input is too long",  # Bedrock and others
    "reduce the length of the messages",  # OpenAI / Groq
    "context window exceeded",
    "exceeds the context window",
    "contextwindowexceedederror",  # LiteLLM
    "input tokens exceed the configured limit",  # Azure
    "context length exceeded",
    "exceeds the maximum context",
    "exceeds the maximum number of tokens allowed",  # Gemini
    "exceeds model context length",
    "longer than the model's context length",
    # vLLM's engine-level checks: "The decoder prompt (length 9000) is longer than the maximum model
    # length of 8192", and V1's "Input prompt (9000 tokens) is too long and exceeds limit of 8192".
    "is longer than the maximum model length",
    "is too long and exceeds limit of",
    # DashScope (compatible mode): code invalid_parameter_error, which alone means any bad parameter;
    # its message "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 30720]".
    "range of input length should be",
)
# Looser phrases, trusted only on errors that came from a provider (HTTP status or SDK error).
PROVIDER_PHRASES = ("context length", "too many tokens", "context window")
PROVIDER_STATUSES = frozenset({400, 413, 422})
_MAX_CHAIN = 32


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    stack = [exc]
    while stack and len(seen) < _MAX_CHAIN:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        stack.extend(e for e in getattr(current, "exceptions", ()) if isinstance(e, BaseException))


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def _body_fields(body: Any) -> Iterator[str]:
    """``code``, ``type`` and ``message`` strings of an error body (flat or under ``error``)."""
    if isinstance(body, str):
        yield body
        return
    if not isinstance(body, Mapping):
        return
    for layer in (body, body.get("error")):
        if isinstance(layer, Mapping):
            for key in ("code", "type", "message"):
                if isinstance(layer.get(key), str):
                    yield layer[key]
        elif isinstance(layer, str):
            yield layer


def _codes(exc: BaseException) -> Iterator[str]:
    for value in (getattr(exc, "code", None), getattr(exc, "type", None)):
        if isinstance(value, str):
            yield value
    yield from _body_fields(getattr(exc, "body", None))


def _is_provider_error(exc: BaseException) -> bool:
    if _OpenAIAPIError is not None and isinstance(exc, _OpenAIAPIError):
        return True
    return _status(exc) in PROVIDER_STATUSES


def is_context_overflow(exc: BaseException) -> bool:
    """True when ``exc`` (or anything it wraps) says the request exceeded the model's context."""
    for error in _chain(exc):
        if isinstance(error, ContextOverflowError):
            return True
        texts = [str(error), *_codes(error)]
        lowered = " ".join(texts).lower()
        if any(code in OVERFLOW_CODES for code in (t.strip().lower() for t in texts)):
            return True
        if any(phrase in lowered for phrase in OVERFLOW_PHRASES):
            return True
        if _is_provider_error(error) and any(phrase in lowered for phrase in PROVIDER_PHRASES):
            return True
    return False


# --- what the run says when a request cannot be made to fit ----------------------------------------


def summary_failed_too_long(cause: Exception, tokens: int, window: int | None) -> str:
    """The run's error when a summary failed and the compacted view cannot fit either."""
    limit = f"the model's context window ({window} tokens)" if window else "the model's context window"
    return (
        f"Context compression failed ({type(cause).__name__}) and the conversation "
        f"(about {tokens} tokens) does not fit {limit}."
    )


def still_too_long(tokens: int, window: int | None, *, tried: str) -> str:
    """The run's error when even the compressed request overflows: plain words, the platform's figures."""
    if window and tokens > window:
        size = f"about {tokens:,} tokens, {tokens - window:,} over the model's context window of {window:,}"
    elif window:
        size = (
            f"about {tokens:,} tokens by the platform's estimate, which the model's server counted as over "
            f"its context window of {window:,}"
        )
    else:
        size = f"about {tokens:,} tokens, which the model's server counted as over its context window"
    return (
        f"This conversation is too long for the model even after compression ({size}). Tried: {tried}. "
        "Start a new thread, or send less at once."
    )


def held_back_too_long(reason: str, tokens: int) -> str:
    """The run's error when the spend guard held a summary back and nothing could be dropped to fit."""
    return (
        f"The spend guard held a summary back ({reason}) and the conversation "
        f"(about {tokens} tokens) does not fit the model's context window."
    )
