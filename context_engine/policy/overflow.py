"""Context-overflow classification: is this model-call exception "the prompt is too long"? And what the
run says when a request cannot be made to fit.

An error is an overflow when it is langchain-core's ``ContextOverflowError``, when its ``code`` (or its
body's, openai 3.x keeps the code out of the message) says so, when it carries a phrase specific to
overflow, or by structure: a 400/413/422 from a provider whose body speaks of tokens, context, length or
the prompt against a limit, with a figure (the wording of providers we have never seen). The body may be
an object, a string, or a JSON list of objects (Gemini's OpenAI-compatible endpoint). Rate limits and
auth errors never are, even when they mention tokens. Walks ``__cause__``/``__context__`` so wrapped
errors are found. Pure: no network.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.exceptions import ContextOverflowError

try:  # openai is a dependency of the platform, but the engine does not need it to import
    from openai import APIError as _OpenAIAPIError
except ImportError:  # pragma: no cover
    _OpenAIAPIError = None  # type: ignore[assignment,misc]

OVERFLOW_CODES = frozenset(
    {
        "context_length_exceeded",  # OpenAI, Azure OpenAI, vLLM, DeepSeek, most OpenAI-compatible servers
        "context_window_exceeded",
        "exceed_context_size_error",  # llama.cpp server
        "model_context_window_exceeded",
        "model_max_prompt_tokens_exceeded",  # GitHub Copilot
        # MiniMax's OpenAI-compatible API answers 200 with no choices and ``base_resp`` {"status_code": 1039,
        # "status_msg": "token limit"} (issue MiniMax-AI/MiniMax-01#15): the whole message is the code.
        "token limit",
    }
)
# Phrases specific enough to classify any exception in the chain.
OVERFLOW_PHRASES = (
    "context_length_exceeded",
    "maximum context length",  # OpenAI / vLLM / DeepSeek / Mistral: "... maximum context length is ..."
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
    "maximum prompt length",  # xAI: "This model's maximum prompt length is 131072 but the request ..."
    "exceeded model token limit",  # Moonshot / Kimi: "Your request exceeded model token limit: 262144"
    "exceed context limit",  # Anthropic: "input length and `max_tokens` exceed context limit: ..."
    # vLLM's engine-level checks: "The decoder prompt (length 9000) is longer than the maximum model
    # length of 8192", and V1's "Input prompt (9000 tokens) is too long and exceeds limit of 8192".
    "is longer than the maximum model length",
    "is too long and exceeds limit of",
    # DashScope (compatible mode): code invalid_parameter_error, which alone means any bad parameter;
    # its message "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 30720]".
    "range of input length should be",
    # MiniMax (OpenAI- and Anthropic-compatible): "invalid params, context window exceeds limit (2013)",
    # 2013 being its code for invalid parameters, not a size.
    "context window exceeds limit",
)
# Looser phrases, trusted only on errors that came from a provider (HTTP status or SDK error).
PROVIDER_PHRASES = ("context length", "too many tokens", "context window")
PROVIDER_STATUSES = frozenset({400, 413, 422})
# A rate limit ("tokens per min (TPM): Limit 30000, Requested 45000") or an auth error is never an
# overflow, whatever it mentions: compressing would not make the retry succeed.
NEVER_OVERFLOW_STATUSES = frozenset({401, 403, 429})
_MAX_CHAIN = 32

# The structural rule (see the module docstring). Output-size parameters are blanked first, so that
# "max_tokens is too large: 10000. This model supports at most 4096 completion tokens" stays a
# parameter error, while "input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000"
# is still read as the overflow it is.
_OUTPUT_SIZE = re.compile(r"\bmax_\w*tokens\b|\b(?:completion|output|generated|new|reasoning)[ _]tokens?\b")
_SIZE_WORD = re.compile(r"\b(?:tokens?|context|length|prompt)\b")
_LIMIT_WORD = re.compile(
    r"exceed|maximum|\bmax\b|limit|too (?:long|large|many)|at most|(?:less|greater|more|longer|larger) than"
    r"|[<>]=?|(?:should|must) be"
)
_FIGURE = re.compile(r"\d{3,}|\d{1,3}(?:,\d{3})+")  # token limits and counts: hundreds and up
_RATE_LIMIT = re.compile(r"rate.?limit|per min|\btpm\b|\brpm\b|quota")
_SDK_PREFIX = re.compile(r"^error code: \d+ - ")
# Where the words of an error body live: flat, under ``error`` (an object, a string or a list), in
# OpenRouter's ``metadata.raw``, FastAPI's ``detail``, MiniMax's ``base_resp.status_msg``.
_BODY_KEYS = (
    "code",
    "type",
    "message",
    "status",
    "detail",
    "raw",
    "error",
    "errors",
    "metadata",
    "base_resp",
    "status_msg",
)
_MAX_BODY_DEPTH = 5


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


def _body_fields(body: Any, depth: int = 0) -> Iterator[str]:
    """The strings of an error body (``code``, ``type``, ``message``...), however it is nested: an
    object, a string, or a list of either (Gemini answers ``[{"error": {...}}]``)."""
    if isinstance(body, str):
        yield body
    elif depth >= _MAX_BODY_DEPTH:
        return
    elif isinstance(body, Mapping):
        for key in _BODY_KEYS:
            if key in body:
                yield from _body_fields(body[key], depth + 1)
    elif isinstance(body, list | tuple):
        for item in body[:8]:
            yield from _body_fields(item, depth + 1)


def _codes(exc: BaseException) -> Iterator[str]:
    for value in (getattr(exc, "code", None), getattr(exc, "type", None)):
        if isinstance(value, str):
            yield value
    yield from _body_fields(getattr(exc, "body", None))


def _is_provider_error(exc: BaseException) -> bool:
    status = _status(exc)
    if status in NEVER_OVERFLOW_STATUSES:
        return False
    if _OpenAIAPIError is not None and isinstance(exc, _OpenAIAPIError):
        return True
    return status in PROVIDER_STATUSES


def _says_too_long(exc: BaseException) -> bool:
    """The structural rule: a 400/413/422 whose body speaks of the input's size against a limit, with
    a figure, and is not a rate limit."""
    if _status(exc) not in PROVIDER_STATUSES:
        return False
    body = getattr(exc, "body", None)
    texts = list(_body_fields(body)) if body is not None else [str(exc)]
    text = _SDK_PREFIX.sub("", " ".join(texts).lower())
    if _RATE_LIMIT.search(text):
        return False
    text = _OUTPUT_SIZE.sub(" ", text)
    return bool(_SIZE_WORD.search(text) and _LIMIT_WORD.search(text) and _FIGURE.search(text))


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
        if _says_too_long(error):
            return True
    return False


# --- the limit a provider states when it rejects a request ----------------------------------------

# Where providers state their limit, tried in order on the lowered text: DashScope's range, "maximum
# context/prompt/model length is|of N" (OpenAI, vLLM, xAI), "... > N" (Anthropic, "prompt is too long:
# 210000 tokens > 200000 maximum"), "limit (is|of|:) N" (vLLM V1, Moonshot).
_STATED_LIMITS = (
    re.compile(r"range of input length should be \[\s*\d+\s*,\s*(\d[\d,]*)\s*\]"),
    re.compile(
        r"max(?:imum)? (?:context|prompt|model|input)? ?(?:length|size|window)(?: is| of|:)? (\d[\d,]{2,})"
    ),
    re.compile(r"> ?(\d[\d,]{2,})"),
    re.compile(r"limit(?: is| of|:) ?(\d[\d,]{2,})"),
)
# Body fields that hold the window as a number (llama.cpp's ``n_ctx``, vLLM's ``max_model_len``).
_LIMIT_FIELDS = ("n_ctx", "max_model_len")


def _body_limit(body: Any, depth: int = 0) -> int | None:
    if depth >= _MAX_BODY_DEPTH or not isinstance(body, Mapping):
        return None
    for key in _LIMIT_FIELDS:
        value = body.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return next((found for v in body.values() if (found := _body_limit(v, depth + 1))), None)


def provider_limit(exc: BaseException) -> int | None:
    """The context limit, in tokens, that the provider stated when it rejected a request as too long;
    ``None`` when it stated none (OpenAI's "Request too large for this model.")."""
    for error in _chain(exc):
        body = getattr(error, "body", None)
        if found := _body_limit(body):
            return found
        text = " ".join([str(error), *(_body_fields(body) if body is not None else ())]).lower()
        for pattern in _STATED_LIMITS:
            if match := pattern.search(text):
                return int(match.group(1).replace(",", ""))
    return None


# --- what the run says when a request cannot be made to fit ----------------------------------------


def _rejected(limit: int | None) -> str:
    """What the provider did, in its own figure when it gave one."""
    if limit:
        return f"the model's server rejected it as longer than its limit of {limit:,} tokens"
    return "the model's server rejected it as too long without stating its limit"


def summary_failed_too_long(
    cause: Exception, tokens: int, window: int | None, *, rejected: bool = False, limit: int | None = None
) -> str:
    """The run's error when a summary failed and the compacted view cannot fit either: by our estimate
    against the window, or (``rejected``) because the provider refused it, with its ``limit`` if stated.
    The run's users read it: ``cause``'s class and text stay with the chained exception, for the admin
    and the log."""
    failed = "Context compression failed"
    if rejected and not (window and tokens > window):
        return f"{failed} and the conversation (about {tokens:,} tokens by the platform's estimate) is too long: {_rejected(limit)}."
    fit = f"the model's context window ({window:,} tokens)" if window else "the model's context window"
    return f"{failed} and the conversation (about {tokens:,} tokens) does not fit {fit}."


def still_too_long(tokens: int, window: int | None, *, tried: str, limit: int | None = None) -> str:
    """The run's error when even the compressed request overflows: plain words, the platform's figures
    and, when the provider refused a request our estimate puts under the window, the provider's."""
    if window and tokens > window:
        size = f"about {tokens:,} tokens, {tokens - window:,} over the model's context window of {window:,}"
    else:
        size = f"about {tokens:,} tokens by the platform's estimate; {_rejected(limit)}"
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
