"""Live events to a thread's Channels group, sent only outside an open transaction (on Redis, through
the process's one publisher: ``conversations.publisher``).

Event shapes (JSON primitives only), delivered to sockets as ``{"type": <type>, **payload}``:

- ``run.status``      ``{run_id, status, error?, question?}`` (``question`` when ``interrupted``)
- ``run.token``       ``{run_id, text}``: a streamed piece of the assistant's reply
- ``message.created`` ``{message: {id, seq, role, content, tool_calls, tool_call_id, tool_name, run_id}}``
- ``compression``     ``{status: started|completed|failed, level, before_tokens, after_tokens, ...}``
- ``state``           ``{token_usage: {...}}``: fresh pressure figures; ``{reason: "agent_retuned"}`` when
                      a staff user changed the agent's budget (sent to the agent's group: every open
                      thread of that agent re-reads its meter)
- ``message.pin``     ``{message_id, seq, pinned}``: a message was pinned or unpinned
- ``compression.job`` ``{job: {id, status, attempts, error, ...}}``: a manual or bulk compression job
                      changed status (queued, running, then succeeded, failed, cancelled or no_change)
- ``thread.title``    ``{title}``: the thread's title changed (its first message named it, or a rename)

Agent middleware emits ``compression`` and ``state`` events on LangGraph's ``custom`` stream as dicts
with a ``"type"`` key (``get_stream_writer()({"type": "compression", "status": "started", ...})``);
the run executor relays those here.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from context_engine.events import EVENT_TYPE as COMPRESSION  # the middleware's own event type
from context_engine.text import clean_text
from conversations.publisher import pooled, publisher

logger = logging.getLogger(__name__)

RUN_STATUS = "run.status"
RUN_TOKEN = "run.token"
MESSAGE_CREATED = "message.created"
STATE = "state"
PIN = "message.pin"
COMPRESSION_JOB = "compression.job"
TITLE = "thread.title"
EVENT_TYPES = frozenset(
    {RUN_STATUS, RUN_TOKEN, MESSAGE_CREATED, COMPRESSION, STATE, PIN, COMPRESSION_JOB, TITLE}
)
# The Channels message type; ThreadConsumer.thread_event receives it.
CHANNELS_MESSAGE_TYPE = "thread.event"
# Sent to a user's group when a session of theirs logs out; ThreadConsumer.session_ended receives it.
SESSION_ENDED_MESSAGE_TYPE = "session.ended"


def thread_group(thread_id: object) -> str:
    """The one Channels group name of a thread."""
    return f"thread.{thread_id}"


def agent_group(agent_id: object) -> str:
    """The Channels group of every open thread page of one agent (its configuration changed)."""
    return f"agent.{agent_id}"


def user_group(user_id: object) -> str:
    """The Channels group of every open socket of one user (closed when a session of theirs logs out)."""
    return f"user.{user_id}"


def json_safe(value: Any) -> Any:
    """``value`` reduced to JSON primitives (unknown objects become strings), its text cleaned as for
    storage (``context_engine.text``: no NUL, no lone surrogate, which no wire can carry)."""
    return clean_text(json.loads(json.dumps(value, default=str)))


def _send(thread_id: str, event: dict[str, Any], *, group: str | None = None) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    target, message = group or thread_group(thread_id), {"type": CHANNELS_MESSAGE_TYPE, "event": event}
    if pooled(layer):  # Redis: one long-lived loop and pool per process, the run never waits on it
        publisher.publish(layer, target, message)
        return
    try:
        async_to_sync(layer.group_send)(target, message)
    except Exception:  # noqa: BLE001 - a lost live event must never fail the run that emitted it
        logger.exception("Could not broadcast a %s event to %s", event.get("type"), group or thread_id)


def broadcast_now(thread_id: object, type: str, **payload: Any) -> None:  # noqa: A002
    """Send at once, even inside a transaction: only for progress notices (a compression has started)
    that carry no state a receiver would read back before the transaction commits."""
    if type not in EVENT_TYPES:
        raise ValueError(f"Unknown event type {type!r}")
    _send(str(thread_id), json_safe({"type": type, **payload}))


def broadcast(thread_id: object, type: str, **payload: Any) -> None:  # noqa: A002 - the event's own word
    """Send an event to the thread's sockets now, or on commit when inside an atomic block."""
    if type not in EVENT_TYPES:
        raise ValueError(f"Unknown event type {type!r}")
    event = json_safe({"type": type, **payload})
    thread_id = str(thread_id)
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: _send(thread_id, event))
    else:
        _send(thread_id, event)


def session_ended(*, user_id: object, session_key: str | None) -> None:
    """Tell the user's open sockets that ``session_key`` logged out: those of that session close."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": SESSION_ENDED_MESSAGE_TYPE, "session_key": session_key}
    try:
        async_to_sync(layer.group_send)(user_group(user_id), message)
    except Exception:  # noqa: BLE001 - the logout itself must succeed; sockets re-check on their own
        logger.exception("Could not tell the sockets of user %s that a session ended", user_id)


def broadcast_agent(agent_id: object, type: str, **payload: Any) -> None:  # noqa: A002
    """Send an event to every open thread page of one agent, on commit when inside an atomic block."""
    if type not in EVENT_TYPES:
        raise ValueError(f"Unknown event type {type!r}")
    event = json_safe({"type": type, **payload})
    group = agent_group(agent_id)
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: _send("", event, group=group))
    else:
        _send("", event, group=group)
