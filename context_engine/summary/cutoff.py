"""Pair-safe cutoff (SPEC §6 step 4): where the summarized span ends and the kept tail begins.

The kept tail is the last ``keep_messages`` messages, shortened further when it would exceed a token
cap (half of ``T``), never separating an AIMessage with tool calls from its ToolMessages and never
empty. ``0`` means nothing can be cut.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from context_engine.formats import SUMMARY_MARKER_KEY, SUMMARY_MARKER_VALUE
from context_engine.tokens.messages import DEFAULT_PROFILE, TokenProfile, estimate_message


def is_summary_message(message: BaseMessage) -> bool:
    return message.additional_kwargs.get(SUMMARY_MARKER_KEY) == SUMMARY_MARKER_VALUE


def tail_start_within(
    messages: Sequence[BaseMessage], *, max_tokens: int, profile: TokenProfile = DEFAULT_PROFILE
) -> int:
    """The smallest index whose suffix fits ``max_tokens`` (``len(messages)`` if not even the last fits).

    Walks from the end and stops at the first message that does not fit, so it costs O(tail).
    """
    index, total = len(messages), 0
    while index > 0:
        total += estimate_message(messages[index - 1], profile)
        if total > max_tokens:
            break
        index -= 1
    return index


def _owner_index(messages: Sequence[BaseMessage], index: int) -> int | None:
    """Index of the AIMessage that issued the tool call answered by ``messages[index]``."""
    call_id = messages[index].tool_call_id  # type: ignore[attr-defined]
    for candidate in range(index - 1, -1, -1):
        message = messages[candidate]
        if isinstance(message, AIMessage) and any(call.get("id") == call_id for call in message.tool_calls):
            return candidate
    return None


def _past_tool_results(messages: Sequence[BaseMessage], index: int) -> int:
    while index < len(messages) and isinstance(messages[index], ToolMessage):
        index += 1
    return index


def pair_safe_index(messages: Sequence[BaseMessage], index: int, *, prefer_forward: bool = False) -> int:
    """``index`` moved off a ToolMessage: back to the AIMessage that called it (keeping more), or,
    with ``prefer_forward``, past the tool results (keeping less) unless that would keep nothing."""
    if index <= 0 or index >= len(messages) or not isinstance(messages[index], ToolMessage):
        return max(index, 0)
    if prefer_forward:
        forward = _past_tool_results(messages, index)
        if forward < len(messages):
            return forward
    owner = _owner_index(messages, index)
    if owner is not None:
        return owner
    forward = _past_tool_results(messages, index)
    return forward if forward < len(messages) else 0


def find_cutoff(
    messages: Sequence[BaseMessage],
    *,
    keep_messages: int,
    max_tail_tokens: int | None = None,
    profile: TokenProfile = DEFAULT_PROFILE,
) -> int:
    """Local cutoff into ``messages``: ``messages[:cutoff]`` are summarized, the rest kept verbatim.

    Keeps the last ``keep_messages`` (at least one); when ``max_tail_tokens`` is given, keeps fewer
    if the tail would exceed it. Returns 0 when nothing (or only earlier summaries) would be cut.
    """
    count = len(messages)
    if count < 2:
        return 0
    cutoff = max(count - max(keep_messages, 1), 0)
    prefer_forward = False
    if max_tail_tokens is not None and max_tail_tokens > 0:
        capped = tail_start_within(messages, max_tokens=max_tail_tokens, profile=profile)
        if capped > cutoff:
            cutoff, prefer_forward = capped, True
    cutoff = min(cutoff, count - 1)  # the model always sees the latest message verbatim
    cutoff = pair_safe_index(messages, cutoff, prefer_forward=prefer_forward)
    if cutoff <= 0 or all(is_summary_message(m) for m in messages[:cutoff]):
        return 0
    return cutoff
