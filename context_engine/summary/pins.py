"""Pinned messages (issue 14 item 1): which messages a summary must leave verbatim, pair-safe.

A pinned message is never folded into a summary nor compacted. Pins are by message id. A pinned
tool result keeps the AIMessage that called it, and that AIMessage keeps all its results (a provider
rejects a tool call without its results), so a pin always covers a whole tool-call group.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from context_engine.tokens.messages import DEFAULT_PROFILE, TokenProfile, messages_tokens


def _groups(messages: Sequence[BaseMessage]) -> dict[str, str]:
    """Each message id mapped to its group's key: the calling AIMessage's id for a tool-call group,
    else its own id."""
    owner_of_call: dict[str, str] = {}
    group: dict[str, str] = {}
    for message in messages:
        if message.id is None:
            continue
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                if call_id := call.get("id"):
                    owner_of_call[call_id] = message.id
            group[message.id] = message.id
        elif isinstance(message, ToolMessage):
            group[message.id] = owner_of_call.get(message.tool_call_id, message.id)
        else:
            group[message.id] = message.id
    return group


def pinned_closure(messages: Sequence[BaseMessage], pinned_ids: Iterable[str]) -> frozenset[str]:
    """``pinned_ids`` widened to whole tool-call groups (ids absent from ``messages`` are kept as
    they are: the message may arrive later)."""
    pinned = set(pinned_ids)
    if not pinned:
        return frozenset()
    group = _groups(messages)
    keys = {group.get(message_id, message_id) for message_id in pinned}
    return frozenset(pinned | {message_id for message_id, key in group.items() if key in keys})


def pin_group(messages: Sequence[BaseMessage], message_id: str) -> list[BaseMessage]:
    """The messages a pin of ``message_id`` keeps, in order (empty when the id is not there)."""
    ids = pinned_closure(messages, [message_id])
    return [m for m in messages if m.id in ids]


def split_pinned(
    span: Sequence[BaseMessage], pinned_ids: Collection[str]
) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """``span`` split into (to fold, kept verbatim), each in its original order. ``pinned_ids`` must
    already be a closure (``pinned_closure``); earlier summaries are never "kept"."""
    if not pinned_ids:
        return list(span), []
    folded: list[BaseMessage] = []
    kept: list[BaseMessage] = []
    for message in span:
        (kept if message.id in pinned_ids else folded).append(message)
    return folded, kept


def pinned_tokens(
    messages: Iterable[BaseMessage], pinned_ids: Collection[str], profile: TokenProfile = DEFAULT_PROFILE
) -> int:
    """Estimated tokens of the pinned messages among ``messages``."""
    return messages_tokens([m for m in messages if m.id in pinned_ids], profile)


def pin_room(*, limit_tokens: int, used_tokens: int) -> int:
    """Tokens still free under the per-agent pinned cap (never negative)."""
    return max(limit_tokens - used_tokens, 0)


def restore_pinned(
    original: Sequence[BaseMessage], view: Sequence[BaseMessage], pinned_ids: Collection[str]
) -> list[BaseMessage]:
    """``view`` (a compacted copy of ``original``, same length and order) with every pinned message put
    back as it was: pinned messages are never compacted."""
    if not pinned_ids:
        return list(view)
    return [o if o.id in pinned_ids else v for o, v in zip(original, view, strict=True)]
