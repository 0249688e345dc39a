"""View-only truncation of long ``write_file``/``edit_file`` tool-call arguments (SPEC §6 step 2).

The file body an agent wrote is already on disk; the context only needs to know the call happened.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, ToolCall

from context_engine.formats import TRUNCATED_ARG_KEEP_CHARS, TRUNCATED_ARG_SUFFIX, TRUNCATED_ARG_TOOLS
from context_engine.tokens.messages import without_estimate

T = TypeVar("T")


def _truncate_string(value: str, max_length: int) -> tuple[str, bool]:
    replacement = value[:TRUNCATED_ARG_KEEP_CHARS] + TRUNCATED_ARG_SUFFIX
    if len(value) > max_length and len(value) > len(replacement):
        return replacement, True
    return value, False


def _truncate_value(value: Any, max_length: int) -> tuple[Any, bool]:
    if isinstance(value, str):
        return _truncate_string(value, max_length)
    if isinstance(value, dict):
        pairs = [(k, *_truncate_value(v, max_length)) for k, v in value.items()]
        if any(changed for _, _, changed in pairs):
            return {k: v for k, v, _ in pairs}, True
        return value, False
    if isinstance(value, list):
        items = [_truncate_value(v, max_length) for v in value]
        if any(changed for _, changed in items):
            return [v for v, _ in items], True
        return value, False
    return value, False


def _truncate_raw_arguments(arguments: str, max_length: int) -> str:
    """Provider-format JSON arguments with long strings truncated; re-encoded when parseable."""
    if len(arguments) <= max_length:
        return arguments
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        truncated, changed = _truncate_value(parsed, max_length)
        return json.dumps(truncated, ensure_ascii=False) if changed else arguments
    return _truncate_string(arguments, max_length)[0]


def _truncated_calls(calls: list[ToolCall], max_length: int) -> tuple[list[ToolCall], int]:
    """The calls with their arguments truncated, and how many of them were."""
    new_calls, count = [], 0
    for call in calls:
        if call.get("name") in TRUNCATED_ARG_TOOLS:
            args, changed = _truncate_value(call.get("args") or {}, max_length)
            if changed:
                call = {**call, "args": args}
                count += 1
        new_calls.append(call)
    return new_calls, count


def _truncated_raw_call(raw: Any, max_length: int) -> Any:
    """A provider-format call (``{"function": {"name", "arguments"}}``) with its arguments truncated."""
    function = raw.get("function") if isinstance(raw, dict) else None
    arguments = function.get("arguments") if isinstance(function, dict) else None
    if not (
        isinstance(function, dict)
        and function.get("name") in TRUNCATED_ARG_TOOLS
        and isinstance(arguments, str)
    ):
        return raw
    truncated = _truncate_raw_arguments(arguments, max_length)
    if truncated is arguments:
        return raw
    return {**raw, "function": {**function, "arguments": truncated}}


def _truncated_block(block: Any, max_length: int) -> Any:
    """A ``tool_use`` content block with its input truncated."""
    if not (
        isinstance(block, dict)
        and block.get("type") == "tool_use"
        and block.get("name") in TRUNCATED_ARG_TOOLS
    ):
        return block
    new_input, changed = _truncate_value(block.get("input"), max_length)
    return {**block, "input": new_input} if changed else block


def _changed_items(items: list[T], truncated: Callable[[T, int], T], max_length: int) -> list[T] | None:
    """``items`` with each one truncated, or None when none changed (an item that did is a new object)."""
    new, changed = [], False
    for item in items:
        new_item = truncated(item, max_length)
        changed = changed or new_item is not item
        new.append(new_item)
    return new if changed else None


def truncate_tool_call_args(message: AIMessage, *, max_length: int) -> tuple[AIMessage, int]:
    """``write_file``/``edit_file`` string arguments longer than ``max_length`` become their first 20
    characters + the marker, in ``tool_calls``, the raw provider ``additional_kwargs["tool_calls"]`` and
    ``tool_use`` content blocks. Returns the same message when nothing changed, and the count of calls
    truncated. ``max_length <= 0`` disables truncation."""
    if max_length <= 0:
        return message, 0
    update: dict[str, Any] = {}
    calls, count = _truncated_calls(message.tool_calls, max_length)
    if count:
        update["tool_calls"] = calls
    raw_calls = message.additional_kwargs.get("tool_calls")
    if isinstance(raw_calls, list) and (raw := _changed_items(raw_calls, _truncated_raw_call, max_length)):
        update["additional_kwargs"] = {**message.additional_kwargs, "tool_calls": raw}
    if isinstance(message.content, list) and (
        blocks := _changed_items(message.content, _truncated_block, max_length)
    ):
        update["content"] = blocks
    if not update:
        return message, 0
    update["response_metadata"] = without_estimate(message.response_metadata)
    # Truncated only in its raw or block form, a call still counts once.
    return message.model_copy(update=update), max(count, 1)
