"""Messages as the history file and the summarizer read them: the text verbatim (nothing escaped, so a
URL's ``&`` stays ``&``), in the ``<message type="...">`` frame of ``context_engine.formats``. Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from context_engine.formats import (
    TRANSCRIPT_CALLS_TEMPLATE,
    TRANSCRIPT_CONTENT_TEMPLATE,
    TRANSCRIPT_MEDIA_TEMPLATE,
    TRANSCRIPT_MESSAGE_TEMPLATE,
    TRANSCRIPT_SEPARATOR,
    TRANSCRIPT_TOOL_CALL_TEMPLATE,
)

_MEDIA_KINDS = frozenset({"image", "audio", "video", "file"})


def _frame(template: str, field: str) -> tuple[str, str]:
    """The frame before and after ``{field}`` in ``template`` as regex sources, any attribute allowed."""
    head, tail = template.split("{" + field + "}")
    attribute = re.escape("{role}"), re.escape("{id}"), re.escape("{name}")
    head, tail = re.escape(head), re.escape(tail)
    for name in attribute:
        head = head.replace(name, '[^"]*')
    return head, tail


_FRAMES = [
    _frame(TRANSCRIPT_MESSAGE_TEMPLATE, "content"),
    _frame(TRANSCRIPT_CONTENT_TEMPLATE, "content"),
    _frame(TRANSCRIPT_TOOL_CALL_TEMPLATE, "args"),
]
_FRAME_OPEN = re.compile("^(?:" + "|".join(head for head, _ in _FRAMES) + ")")
_FRAME_CLOSE = re.compile("(?:" + "|".join(tail for _, tail in _FRAMES) + ")$")


def message_role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return "human"
    if isinstance(message, AIMessage):
        return "ai"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, ChatMessage):
        return message.role
    return message.type


def _block_text(block: Any) -> str | None:
    """A content block's text as the model wrote or read it; inline payloads (``data:``, base64) are
    left out: ``offload_media`` has replaced every one it could save by a text receipt."""
    if isinstance(block, str):
        return block or None
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text":
        return block.get("text") or None
    if kind == "reasoning":
        return f"<reasoning>{block['reasoning']}</reasoning>" if block.get("reasoning") else None
    url = block.get("url")
    if kind == "image_url":
        kind, value = "image", block.get("image_url")
        url = value.get("url") if isinstance(value, dict) else value
    if kind in _MEDIA_KINDS and not block.get("base64"):
        if isinstance(url, str) and url and not url.lower().startswith("data:"):
            return TRANSCRIPT_MEDIA_TEMPLATE.format(kind=kind, key="url", value=url)
        if block.get("file_id"):
            return TRANSCRIPT_MEDIA_TEMPLATE.format(kind=kind, key="file_id", value=block["file_id"])
    return None


def render_message(message: BaseMessage) -> str:
    content = message.content
    blocks = [content] if isinstance(content, str) else content
    text = " ".join(part for block in blocks if (part := _block_text(block)))
    role = message_role(message)
    calls = message.tool_calls if isinstance(message, AIMessage) else []
    if not calls:
        return TRANSCRIPT_MESSAGE_TEMPLATE.format(role=role, content=text)
    parts = [TRANSCRIPT_CONTENT_TEMPLATE.format(content=text)] if text else []
    parts += [
        TRANSCRIPT_TOOL_CALL_TEMPLATE.format(
            id=call.get("id") or "",
            name=call.get("name") or "",
            args=json.dumps(call.get("args", {}), ensure_ascii=False),
        )
        for call in calls
    ]
    return TRANSCRIPT_CALLS_TEMPLATE.format(role=role, parts="\n".join(parts))


def transcript_line_text(line: str) -> str:
    """The conversation's own text on one line of a rendered transcript: the frame our templates put
    around it (message, content and tool-call tags, whose attributes are ours) taken off."""
    return _FRAME_CLOSE.sub("", _FRAME_OPEN.sub("", line, count=1), count=1)


def render_messages(messages: Sequence[BaseMessage]) -> str:
    """``messages`` one after another, each verbatim (see the module docstring)."""
    return TRANSCRIPT_SEPARATOR.join(render_message(message) for message in messages)
