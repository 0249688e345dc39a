"""Provider-usage arithmetic: what one model call reported, and its sum into running totals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage


def response_usage(messages: Sequence[BaseMessage]) -> dict[str, Any] | None:
    """The provider-reported usage of a model call (``usage_metadata`` of its AI messages), if any."""
    total: dict[str, Any] | None = None
    for message in messages:
        usage = getattr(message, "usage_metadata", None)
        if usage:
            total = add_usage(total, dict(usage))
    return total


def add_usage(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Key-wise sum of two usage dicts (nested detail dicts included); other values: right wins."""
    merged: dict[str, Any] = dict(left or {})
    for key, value in (right or {}).items():
        current = merged.get(key)
        if isinstance(value, Mapping):
            merged[key] = add_usage(current if isinstance(current, Mapping) else None, value)
        elif (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and isinstance(current, int | float)
        ):
            merged[key] = current + value
        else:
            merged[key] = value
    return merged


def count_call(usage: Mapping[str, Any] | None, accumulated: Mapping[str, Any] | None) -> dict[str, Any]:
    """``accumulated`` plus one call of ``usage`` (``calls`` counts the calls)."""
    return add_usage(accumulated, {**(usage or {}), "calls": 1})


# --- cached prompt tokens (a provider's prompt cache) ------------------------------------------------

CACHE_READ_KEY = "cache_read"  # LangChain's ``input_token_details`` keys
CACHE_WRITE_KEY = "cache_creation"
INPUT_DETAILS_KEY = "input_token_details"


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def provider_cache_tokens(raw: Mapping[str, Any] | None) -> tuple[int, int]:
    """``(cache read, cache write)`` prompt tokens of a provider's raw usage body, whichever way it
    reports them: OpenAI, xAI, Mistral and LiteLLM ``prompt_tokens_details.cached_tokens``; DeepSeek
    ``prompt_cache_hit_tokens``; Anthropic (native or passed on by a proxy) ``cache_read_input_tokens``
    and ``cache_creation_input_tokens``. A field a provider does not send counts 0."""
    if not isinstance(raw, Mapping):
        return 0, 0
    details = raw.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    read = max(
        _count(details.get("cached_tokens")),
        _count(raw.get("prompt_cache_hit_tokens")),
        _count(raw.get("cache_read_input_tokens")),
    )
    return read, max(
        _count(details.get("cache_write_tokens")), _count(raw.get("cache_creation_input_tokens"))
    )


def with_provider_cache(usage: Mapping[str, Any], raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """LangChain ``usage_metadata`` with the raw body's cached-token figures in ``input_token_details``
    (what the client already mapped is kept when larger). ``input_tokens`` always includes the cached
    tokens (OpenAI's convention): a body whose prompt count leaves them out (Anthropic's native usage,
    where reads and writes exceed ``input_tokens``) has them added back, to the total too."""
    read, write = provider_cache_tokens(raw)
    merged = dict(usage)
    details = dict(merged.get(INPUT_DETAILS_KEY) or {})
    read = max(read, _count(details.get(CACHE_READ_KEY)))
    write = max(write, _count(details.get(CACHE_WRITE_KEY)))
    if not read and not write:
        return merged
    details[CACHE_READ_KEY], details[CACHE_WRITE_KEY] = read, write
    merged[INPUT_DETAILS_KEY] = details
    input_tokens = _count(merged.get("input_tokens"))
    if read + write > input_tokens:
        merged["input_tokens"] = input_tokens + read + write
        merged["total_tokens"] = _count(merged.get("total_tokens")) + read + write
    return merged


def cache_tokens(usage: Mapping[str, Any] | None) -> tuple[int, int]:
    """``(cache read, cache write)`` prompt tokens of a ``usage_metadata`` (0, 0 when none reported),
    each at most ``input_tokens`` together (a provider's figures never bill more than the prompt)."""
    if not usage:
        return 0, 0
    details = usage.get(INPUT_DETAILS_KEY)
    if not isinstance(details, Mapping):
        return 0, 0
    prompt = _count(usage.get("input_tokens"))
    # A service tier prefixes its keys (``flex_cache_read``): every tier's count is the call's.
    read = sum(
        _count(v) for k, v in details.items() if k == CACHE_READ_KEY or k.endswith("_" + CACHE_READ_KEY)
    )
    write = sum(
        _count(v) for k, v in details.items() if k == CACHE_WRITE_KEY or k.endswith("_" + CACHE_WRITE_KEY)
    )
    read = min(read, prompt)
    return read, min(write, prompt - read)
