"""Transcript = checkpoint: every reply and tool result the model sees is a transcript row, same id,
same text, same order."""

from __future__ import annotations

from langchain_core.messages import AIMessage, ToolMessage

from conversations.models import Message
from tests.compression._threads import repository_for


def _text(message) -> str:
    return message.content if isinstance(message.content, str) else message.text


def model_visible(thread) -> list[tuple[str, str]]:
    messages = repository_for(thread).get_values().get("messages", [])
    return [(m.id, _text(m)) for m in messages if isinstance(m, (AIMessage, ToolMessage))]


def transcribed(thread) -> list[tuple[str, str]]:
    rows = Message.objects.filter(conversation=thread, role__in=["assistant", "tool"]).order_by("seq")
    return [(row.lc_message_id, row.content) for row in rows]


def assert_transcript_equals_checkpoint(thread) -> list[tuple[str, str]]:
    checkpoint, transcript = model_visible(thread), transcribed(thread)
    assert transcript == checkpoint, f"transcript {transcript}\n!= checkpoint {checkpoint}"
    return transcript
