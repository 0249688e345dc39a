"""Prefix reuse (issue 40): how much of a request repeats the thread's previous request from its start,
which is what a provider's prompt cache can serve. Each message is reduced to a short fingerprint of
what a provider is sent (its kind, text, tool calls); the request's fixed part (system prompt and tool
schemas) is one more fingerprint in front."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from context_engine.lru import LRU

FINGERPRINT_BYTES = 8
_fingerprints: LRU[int, tuple[BaseMessage, str]] = LRU(16384)  # id(message) -> (message held, print)


def _digest(*parts: Any) -> str:
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=FINGERPRINT_BYTES).hexdigest()


def message_fingerprint(message: BaseMessage) -> str:
    found = _fingerprints.get(id(message))
    if found is not None and found[0] is message:
        return found[1]
    calls = message.tool_calls if isinstance(message, AIMessage) else None
    value = _digest(message.type, message.content, calls, getattr(message, "tool_call_id", None))
    _fingerprints.put(id(message), (message, value))
    return value


def request_fingerprint(head: Any, messages: Sequence[BaseMessage]) -> list[str]:
    """The fingerprints of a request: its fixed part ``head`` (system prompt, tools), then each message."""
    return [_digest(head), *(message_fingerprint(m) for m in messages)]


def shared_prefix(current: Sequence[str], previous: Sequence[str] | None) -> int:
    """How many leading fingerprints ``current`` shares with ``previous`` (0 without one)."""
    if not previous:
        return 0
    count = 0
    for now, before in zip(current, previous, strict=False):
        if now != before:
            break
        count += 1
    return count
