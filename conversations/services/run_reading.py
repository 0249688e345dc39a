"""Reading what a run's stream carries: a message's text, its transcript row, and the question an
interrupt asks."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from conversations.models import AgentRun, Message
from conversations.services.threads import NewMessage


def message_text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


def transcript_entry(message: AIMessage | ToolMessage, *, run: AgentRun, interrupted: bool) -> NewMessage:
    """The transcript row of a model reply (with its tool calls) or of a tool result."""
    entry = NewMessage(
        role=Message.Role.TOOL,
        content=message_text(message),
        run=run,
        lc_message_id=message.id or "",
        interrupted=interrupted,
    )
    if isinstance(message, AIMessage):
        calls = [
            {"id": call.get("id"), "name": call["name"], "args": call.get("args", {})}
            for call in message.tool_calls
        ]
        return replace(entry, role=Message.Role.ASSISTANT, tool_calls=calls)
    return replace(entry, tool_call_id=message.tool_call_id, tool_name=message.name or "")


def interrupt_question(interrupts: Any) -> str:
    """The question of the first interrupt (``ask_user``'s payload), as text."""
    for item in interrupts or ():
        value = getattr(item, "value", item)
        if isinstance(value, dict):
            value = value.get("question", value)
        return str(value)
    return ""
