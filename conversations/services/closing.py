"""What a run writes to close what it left open: answers to tool calls left without a result (a tool
that raised, a worker that died, Stop), the checkpoint's messages the transcript does not hold yet, and
the ``failed`` end of a compression its lost worker started.

The model never sees a dangling call (providers refuse one), and every message it sees is also in the
transcript: the executor records all of these through its one message path.
"""

from __future__ import annotations

from collections.abc import Collection

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from context_engine.events import EVENT_TYPE, FAILED, STARTED, compression_event
from conversations.models import Message

ERROR_MAX_CHARS = 2000
# What a tool call left unanswered reads as in the checkpoint (providers refuse a call without a result).
NOT_EXECUTED = "[Not executed: {reason}]"
EARLIER_ATTEMPT_STOPPED = "an earlier attempt of this turn stopped before the tool ran"
# What the model reads next time in place of a tool result that Stop cut off.
CANCELLED_TOOL_RESULT = "The user stopped the run before this tool call returned; it has no result."
WORKER_LOST = "worker_lost"
WORKER_LOST_ERROR = "worker lost: the process executing this compression stopped before it ended"


def dangling_tool_answers(messages: list[BaseMessage], *, reason: str) -> list[ToolMessage]:
    """Results for the last AI message's tool calls that have none after it (pure)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage):
            answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
            return [
                ToolMessage(
                    content=NOT_EXECUTED.format(reason=reason)[:ERROR_MAX_CHARS],
                    tool_call_id=call["id"],
                    name=call["name"],
                    id=f"not-executed-{call['id']}",
                    status="error",
                )
                for call in message.tool_calls
                if call.get("id") and call["id"] not in answered
            ]
        if not isinstance(message, ToolMessage):
            return []
    return []


def cancelled_tool_answers(messages: list[BaseMessage]) -> list[ToolMessage]:
    """Results saying the user stopped it, for every tool call of ``messages`` without one (pure)."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return [
        ToolMessage(
            content=CANCELLED_TOOL_RESULT,
            tool_call_id=call["id"],
            name=call["name"],
            id=f"cancelled-{call['id']}",
            status="error",
        )
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call.get("id") and call["id"] not in answered
    ]


def unrecorded_tail(
    messages: list[BaseMessage], *, conversation_id: int, seen: Collection[str] = ()
) -> list[BaseMessage]:
    """The checkpoint's replies and tool results after the last one the transcript holds: what a worker
    that died between its checkpoint write and its transcript write left unrecorded."""
    ids = [m.id for m in messages if isinstance(m, (AIMessage, ToolMessage)) and m.id]
    recorded = set(
        Message.objects.filter(conversation_id=conversation_id, lc_message_id__in=ids).values_list(
            "lc_message_id", flat=True
        )
    )
    tail: list[BaseMessage] = []
    for message in reversed(messages):
        if message.id in recorded:
            break
        if isinstance(message, (AIMessage, ToolMessage)) and message.id and message.id not in seen:
            tail.append(message)
    return tail[::-1]


def compression_left_open(run_events: list[dict]) -> dict | None:
    """The ``failed`` event (payload without ``type``) that closes the run's last compression if it was
    ``started`` and never ended (its worker died); ``None`` when every compression ended (pure)."""
    left_open = None
    for event in run_events:
        if isinstance(event, dict) and event.get("type") == EVENT_TYPE:
            left_open = event if event.get("status") == STARTED else None
    if left_open is None:
        return None
    return compression_event(
        status=FAILED,
        level=left_open.get("level") or "",
        before_tokens=left_open.get("before_tokens"),
        error=WORKER_LOST_ERROR,
        reason=WORKER_LOST,
    )
