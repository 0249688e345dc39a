"""Overflow tail clipping (SPEC §6 step 5): when the kept tail ends in a batch of tool results that is
too large by itself, save and replace them (same ids) so the replacements can be written to state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from context_engine.compaction.tool_results import (
    FailedToolResult,
    SavedToolResult,
    is_saved,
    offload_tool_message,
    trailing_tool_batch_start,
)
from context_engine.errors import OffloadError
from context_engine.formats import RECEIPT_UNKNOWN_TOOL
from context_engine.store import ResultStore
from context_engine.tokens.messages import DEFAULT_PROFILE, TokenProfile, messages_tokens


@dataclass(frozen=True)
class ClipResult:
    messages: list[BaseMessage]  # the tail with replacements in place
    replacements: tuple[ToolMessage, ...] = ()  # to persist: same ids, so add_messages replaces them
    saved: tuple[SavedToolResult, ...] = ()
    failed: tuple[FailedToolResult, ...] = ()


def clip_overflow_tail(
    messages: Sequence[BaseMessage],
    *,
    max_tokens: int,
    store: ResultStore | None,
    preview_tokens: int,
    profile: TokenProfile = DEFAULT_PROFILE,
) -> ClipResult:
    """Offload every not-yet-saved tool result of the trailing batch when the batch alone estimates
    at ``max_tokens`` or more; each receipt's preview fits ``preview_tokens // batch size``.

    Returns the same list (and no replacements) when the tail does not end in such a batch. Results
    whose file cannot be written stay whole and are reported in ``failed``.
    """
    start = trailing_tool_batch_start(messages)
    batch = messages[start:]
    if not batch or messages_tokens(batch, profile) < max_tokens:
        return ClipResult(messages if isinstance(messages, list) else list(messages))
    names = {
        call["id"]: call.get("name") or ""
        for message in messages[:start]
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call.get("id")
    }
    per_preview = max(preview_tokens, 0) // len(batch)
    out = list(messages[:start])
    replacements: list[ToolMessage] = []
    saved: list[SavedToolResult] = []
    failed: list[FailedToolResult] = []
    for message in batch:
        if not isinstance(
            message, ToolMessage
        ):  # pragma: no cover - the batch is ToolMessages by construction
            raise TypeError(type(message))
        name = message.name or names.get(message.tool_call_id) or None
        if is_saved(message):
            out.append(message)
            continue
        try:
            replaced, record = offload_tool_message(
                message, store=store, preview_tokens=per_preview, tool_name=name, profile=profile
            )
        except OffloadError as exc:
            failed.append(
                FailedToolResult(
                    message.id, message.tool_call_id, name or RECEIPT_UNKNOWN_TOOL, exc.path, str(exc)
                )
            )
            out.append(message)
            continue
        out.append(replaced)
        replacements.append(replaced)
        saved.append(record)
    if not replacements:
        return ClipResult(messages if isinstance(messages, list) else list(messages), failed=tuple(failed))
    return ClipResult(out, tuple(replacements), tuple(saved), tuple(failed))
