"""Reading what a run's stream carries: a message's text, and the question an interrupt asks."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage


def message_text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


def interrupt_question(interrupts: Any) -> str:
    """The question of the first interrupt (``ask_user``'s payload), as text."""
    for item in interrupts or ():
        value = getattr(item, "value", item)
        if isinstance(value, dict):
            value = value.get("question", value)
        return str(value)
    return ""
