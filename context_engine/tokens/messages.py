"""Token estimates of messages, tool schemas and whole requests (SPEC 4), each message's stored with
it, and the public face of the estimator (text estimation in ``text_tokens``, profiles in
``token_profiles``).

Per-message estimates are read from the message when it carries a valid stored one (see
:func:`with_estimate`), else computed once per process and cached by (profile, hash of content, name,
tool calls, tool_call_id) in a bounded LRU, so a message that did not change is never re-estimated.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, TypedDict, TypeVar

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage

from context_engine.lru import LRU
from context_engine.tokens.profiles import (
    CONSERVATIVE_MARGIN,
    DEFAULT_PROFILE,
    FEATURES,
    PROFILES,
    TokenProfile,
    model_key,
    profile_for_model,
)
from context_engine.tokens.text import (
    DIGIT_FLOOR,
    ESTIMATOR_NAME,
    LETTER_FLOOR,
    PATTERN_FLOOR,
    PUNCT_FLOORS,
    estimate_text,
    text_features,
)

__all__ = [
    "CONSERVATIVE_MARGIN",
    "DEFAULT_PROFILE",
    "DIGIT_FLOOR",
    "ESTIMATE_KEY",
    "ESTIMATOR_NAME",
    "FEATURES",
    "LETTER_FLOOR",
    "PATTERN_FLOOR",
    "PROFILES",
    "PUNCT_FLOORS",
    "TokenProfile",
    "cache_info",
    "clear_cache",
    "estimate_message",
    "estimate_messages",
    "estimate_text",
    "estimate_tool",
    "estimate_tools",
    "model_key",
    "profile_for_model",
    "stored_estimate",
    "stored_text_estimate",
    "text_features",
    "with_estimate",
    "without_estimate",
]


# ---------------------------------------------------------------------------------------------
# Messages


# Media blocks cost a fixed amount (their base64 payload is not text the model reads as tokens).
_MEDIA_TYPES = frozenset({"image", "image_url", "input_image", "audio", "input_audio", "video", "file"})
# Tool-call blocks repeat ``message.tool_calls`` (Anthropic ``tool_use``); counted once, from tool_calls.
_TOOL_CALL_TYPES = frozenset({"tool_use", "tool_call", "function_call", "server_tool_call"})


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _content_tokens(content: Any, profile: TokenProfile, skip_tool_calls: bool = False) -> float:
    if isinstance(content, str):
        return estimate_text(content, profile)
    total = 0.0
    for block in content or ():
        if isinstance(block, str):
            total += estimate_text(block, profile)
        elif isinstance(block, dict):
            btype = block.get("type")
            if btype in _MEDIA_TYPES or (btype is None and "source_type" in block):
                total += profile.image
            elif btype == "text" and isinstance(block.get("text"), str):
                total += estimate_text(block["text"], profile)
            elif skip_tool_calls and btype in _TOOL_CALL_TYPES:
                continue
            else:
                total += estimate_text(_dumps(block), profile)
        else:
            total += estimate_text(str(block), profile)
    return total


# (type, hash and length of the content text, name, tool_call_id, hash and length of the tool calls' repr)
_MessageKey = tuple[str, int, int, str | None, str | None, tuple[int, int] | None]


def _message_key(message: BaseMessage) -> _MessageKey:
    """A cache key for everything the estimate reads from ``message``.

    Text is keyed by ``(hash(text), len(text))``: Python caches a string's (SipHash, 64-bit, per-process
    seeded) hash on the string object, so re-checking an unchanged message on the next model call is
    O(1) instead of re-hashing its content; a collision needs two different texts of the same length
    with the same 64-bit hash.
    """
    fields_ = message.__dict__  # pydantic fields; avoids pydantic's slow __getattr__ for absent ones
    content = fields_.get("content")
    text = content if isinstance(content, str) else _dumps(content)
    extra: tuple[int, int] | None = None
    tool_calls = fields_.get("tool_calls")
    invalid = fields_.get("invalid_tool_calls")
    kwargs = fields_.get("additional_kwargs")
    legacy = kwargs.get("function_call") if kwargs else None
    if tool_calls or invalid or legacy:
        # repr, not JSON: cheaper, and an equal dict built in another key order only costs a cache miss.
        calls = repr(
            (
                [(tc.get("name"), tc.get("args"), tc.get("id")) for tc in tool_calls or ()],
                [(tc.get("name"), tc.get("args"), tc.get("id")) for tc in invalid or ()],
                legacy,
            )
        )
        extra = (hash(calls), len(calls))
    return (
        fields_.get("type") or message.type,
        hash(text),
        len(text),
        fields_.get("name"),
        fields_.get("tool_call_id"),
        extra,
    )


def _estimate_message_uncached(
    message: BaseMessage, profile: TokenProfile, content_tokens: float | None = None
) -> int:
    fields_ = message.__dict__
    tool_calls = fields_.get("tool_calls") or ()
    if content_tokens is None:
        content_tokens = _content_tokens(fields_.get("content"), profile, bool(tool_calls))
    total = profile.message_overhead + content_tokens
    total += estimate_text(fields_.get("type") or message.type, profile)
    name = fields_.get("name")
    if name:
        total += estimate_text(name, profile) + 1
    tool_call_id = fields_.get("tool_call_id")
    if tool_call_id:
        total += estimate_text(str(tool_call_id), profile)
    for tc in tool_calls:
        total += profile.tool_call_overhead + estimate_text(tc.get("name") or "", profile)
        total += estimate_text(_dumps(tc.get("args") or {}), profile)
        if tc.get("id"):
            total += estimate_text(str(tc["id"]), profile)
    for tc in fields_.get("invalid_tool_calls") or ():
        total += profile.tool_call_overhead + estimate_text(tc.get("name") or "", profile)
        total += estimate_text(str(tc.get("args") or ""), profile)
        if tc.get("id"):
            total += estimate_text(str(tc["id"]), profile)
    kwargs = fields_.get("additional_kwargs")
    legacy = kwargs.get("function_call") if kwargs else None
    if legacy:
        total += profile.tool_call_overhead + estimate_text(_dumps(legacy), profile)
    return math.ceil(total)


MESSAGE_CACHE_SIZE = 65536
_message_cache: LRU[tuple[TokenProfile, _MessageKey], int] = LRU(MESSAGE_CACHE_SIZE)
# (profile, id of the tool) -> (the tool, its description, its estimate)
_tool_cache: LRU[tuple[TokenProfile, int], tuple[Any, Any, int]] = LRU(1024)


def cache_info() -> dict[str, int]:
    """Hits, misses and size of the per-message estimate cache."""
    return {"hits": _message_cache.hits, "misses": _message_cache.misses, "size": len(_message_cache)}


def clear_cache() -> None:
    _message_cache.clear()
    _tool_cache.clear()


# Stored estimates: a message carries its estimate in ``response_metadata[ESTIMATE_KEY]`` from the moment
# it enters the state, so no process ever reads its text again. The record names the profile and the
# estimator it was made with (another profile or a new estimator recomputes) and the size of the content
# it was made for (a copy with new content, e.g. a receipt, recomputes). ``response_metadata`` because no
# chat-model integration sends it back to a provider (unlike some ``additional_kwargs``), and it already
# holds per-message token figures (the provider's usage).
ESTIMATE_KEY = "token_estimate"


class EstimateRecord(TypedDict, total=False):
    """What ``response_metadata[ESTIMATE_KEY]`` holds (see :func:`with_estimate`)."""

    profile: str
    estimator: str
    chars: int
    tokens: int
    text: int  # a tool result's text content alone


def _content_size(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    size = 0
    for block in content or ():
        text = block if isinstance(block, str) else block.get("text") if isinstance(block, dict) else None
        size += 1 + (len(text) if isinstance(text, str) else 0)
    return size


def stored_estimate(message: BaseMessage, profile: TokenProfile) -> int | None:
    """The estimate ``message`` carries for ``profile`` and this estimator, if it still holds."""
    metadata = message.__dict__.get("response_metadata")
    record: EstimateRecord | None = metadata.get(ESTIMATE_KEY) if metadata else None
    if (
        record
        and record.get("profile") == profile.name
        and record.get("estimator") == ESTIMATOR_NAME
        and record.get("chars") == _content_size(message.__dict__.get("content"))
    ):
        return record.get("tokens")
    return None


M = TypeVar("M", bound=BaseMessage)


def with_estimate(message: M, profile: TokenProfile) -> M:
    """``message`` carrying its estimate under ``profile`` (itself when it already does; else a copy).
    A tool result with text content also carries the estimate of that text (``text``): compaction
    decides on it whether to offload the result."""
    if stored_estimate(message, profile) is not None:
        return message
    content = message.content
    record: EstimateRecord = {
        "profile": profile.name,
        "estimator": ESTIMATOR_NAME,
        "chars": _content_size(content),
    }
    if isinstance(message, ToolMessage) and isinstance(content, str):
        record["text"] = estimate_text(content, profile)
        record["tokens"] = _estimate_message_uncached(message, profile, record["text"])
    else:
        record["tokens"] = estimate_message(message, profile)
    return message.model_copy(
        update={"response_metadata": {**message.response_metadata, ESTIMATE_KEY: record}}
    )


def stored_text_estimate(message: BaseMessage, profile: TokenProfile) -> int | None:
    """The stored estimate of a tool result's text content (see :func:`with_estimate`), if it holds."""
    if stored_estimate(message, profile) is None:
        return None
    record: EstimateRecord = message.response_metadata[ESTIMATE_KEY]
    return record.get("text")


def without_estimate(metadata: dict[str, Any]) -> dict[str, Any]:
    """``response_metadata`` for a changed copy of a message (its stored estimate no longer holds)."""
    return {k: v for k, v in metadata.items() if k != ESTIMATE_KEY} if ESTIMATE_KEY in metadata else metadata


def estimate_message(message: BaseMessage, profile: TokenProfile = DEFAULT_PROFILE) -> int:
    """Estimated tokens of one message: content, role, name, tool calls, tool_call_id, overhead.
    Read from the message when it carries a valid stored estimate, else computed once per process."""
    stored = stored_estimate(message, profile)
    if stored is not None:
        return stored
    key = (profile, _message_key(message))
    cached = _message_cache.get(key)
    if cached is not None:
        return cached
    value = _estimate_message_uncached(message, profile)
    _message_cache.put(key, value)
    return value


# ---------------------------------------------------------------------------------------------
# Tools and whole requests


def _tool_schema(tool: Any) -> dict[str, Any]:
    if isinstance(tool, dict) and ("function" in tool or "name" in tool and "parameters" in tool):
        return tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(tool)


def estimate_tool(tool: Any, profile: TokenProfile = DEFAULT_PROFILE) -> int:
    """Estimated tokens of one tool's JSON schema (BaseTool, OpenAI tool dict, or anything
    ``convert_to_openai_tool`` accepts)."""
    if isinstance(tool, dict):
        return math.ceil(profile.tool_overhead + estimate_text(_dumps(_tool_schema(tool)), profile))
    key = (profile, id(tool))
    cached = _tool_cache.get(key)
    # The cached entry holds the tool itself, so its id cannot be reused while the entry lives.
    if cached is not None and cached[0] is tool and cached[1] == getattr(tool, "description", None):
        return cached[2]
    value = math.ceil(profile.tool_overhead + estimate_text(_dumps(_tool_schema(tool)), profile))
    _tool_cache.put(key, (tool, getattr(tool, "description", None), value))
    return value


def estimate_tools(tools: Sequence[Any], profile: TokenProfile = DEFAULT_PROFILE) -> int:
    """Estimated tokens of the tool schemas sent with a request."""
    return sum(estimate_tool(t, profile) for t in tools or ())


def messages_tokens(messages: Sequence[BaseMessage], profile: TokenProfile = DEFAULT_PROFILE) -> int:
    """The estimate of ``messages`` alone (no system prompt, tools or reply priming)."""
    return sum(estimate_message(m, profile) for m in messages)


def estimate_messages(
    messages: Sequence[BaseMessage],
    *,
    system: str | SystemMessage | None = None,
    tools: Sequence[Any] = (),
    profile: TokenProfile = DEFAULT_PROFILE,
) -> int:
    """Estimated prompt tokens of a request: system prompt + tool schemas + messages + reply priming."""
    total = 0
    if isinstance(system, str):
        if system:
            total += estimate_message(SystemMessage(content=system), profile)
    elif system is not None:
        total += estimate_message(system, profile)
    total += estimate_tools(tools, profile)
    for message in messages:
        total += estimate_message(message, profile)
    return total + math.ceil(profile.reply_overhead) if (total or messages) else 0


def format_tokens(value: Any) -> str:
    """``950``, ``12.3K``, ``1.05M``: a token count for people (1000-based, three significant digits)."""
    try:
        number = None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        number = None
    if number is None:
        return "–"
    if abs(number) < 1000:
        return str(number)
    divisor, suffix = (1_000_000, "M") if abs(number) >= 1_000_000 else (1000, "K")
    scaled = f"{number / divisor:.3g}"
    if "e" in scaled:  # .3g switches to exponents from 1000 upwards
        scaled = f"{number / divisor:.0f}"
    return f"{scaled}{suffix}"
