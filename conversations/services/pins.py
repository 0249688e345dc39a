"""Pinning transcript messages (issue 14 item 1): a pinned message is kept verbatim by every
compression. Pins are checked against the agent's pinned-token cap under the thread's row lock, so
two pins at once cannot both squeeze under it, and a pin never interleaves with a compression.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone
from langchain_core.messages import BaseMessage, HumanMessage

from agent_platform.calibration.selectors import calibration_for
from agent_platform.runtime.graph import state_repository_for
from context_engine.policy.pressure import refreshed_usage
from context_engine.state import PINNED_IDS_KEY, SUMMARY_EVENT_KEY, TOKEN_USAGE_KEY, merge_token_usage
from context_engine.summary.pins import pin_room, pinned_closure
from context_engine.tokens.messages import estimate_message, messages_tokens
from conversations import events
from conversations.errors import MessageNotFound, PinFoldedWhileBusy, PinLimitExceeded
from conversations.models import Conversation, Message, MessagePin
from conversations.selectors import (
    pinned_message_ids,
    thread_busy_flags,
    thread_state_messages,
    visible_messages,
)
from conversations.services.pressure import conversation_pressure_update
from conversations.services.threads import thread_lock


@dataclass(frozen=True)
class PinState:
    message_id: int
    pinned: bool
    pinned_tokens: int  # the thread's pinned messages, their tool-call partners included
    limit_tokens: int

    @property
    def room_tokens(self) -> int:
        return pin_room(limit_tokens=self.limit_tokens, used_tokens=self.pinned_tokens)


def message_pin(*, thread_id: uuid.UUID | str, message_id: int, user: AbstractBaseUser) -> PinState:
    """Pin a message of the caller's thread (idempotent). Refused with ``PinLimitExceeded`` when the
    thread's pinned messages would then exceed the agent's cap."""
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        message = _message(conversation, message_id)
        limit = conversation.agent.compression_config().pinned_cap
        pinned = pinned_message_ids(conversation=conversation)
        if message.lc_message_id in pinned or hasattr(message, "pin"):
            return PinState(message.pk, True, _pinned_tokens(conversation, pinned), limit)
        used = _pinned_tokens(conversation, pinned)
        after = _pinned_tokens(conversation, [*pinned, message.lc_message_id], extra=message)
        if after > limit:
            room = pin_room(limit_tokens=limit, used_tokens=used)
            raise PinLimitExceeded(
                f"This message needs about {after - used} tokens pinned, but only {room} of the "
                f"{limit} pinned tokens this agent allows are left. Unpin something first.",
                needed_tokens=after - used,
                room_tokens=room,
                limit_tokens=limit,
            )
        _bring_back_if_folded(conversation, message)
        MessagePin.objects.create(
            conversation=conversation, message=message, pinned_by=user, tokens=after - used
        )
        events.broadcast(
            conversation.thread_id, events.PIN, message_id=message.pk, seq=message.seq, pinned=True
        )
        return PinState(message.pk, True, after, limit)


def message_unpin(*, thread_id: uuid.UUID | str, message_id: int, user: AbstractBaseUser) -> PinState:
    """Unpin (idempotent). The message stays in the model's view until the next compression folds it."""
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        message = _message(conversation, message_id)
        deleted, _ = MessagePin.objects.filter(message=message).delete()
        limit = conversation.agent.compression_config().pinned_cap
        used = _pinned_tokens(conversation, pinned_message_ids(conversation=conversation))
        if deleted:
            events.broadcast(
                conversation.thread_id, events.PIN, message_id=message.pk, seq=message.seq, pinned=False
            )
        return PinState(message.pk, False, used, limit)


def _bring_back_if_folded(conversation: Conversation, message: Message) -> None:
    """A message the current summary already folded comes back into the model's view: its id (with its
    tool-call partners) joins the summary event's kept ids, so the model reads it word for word right
    after the summary (``effective_messages``), within the pin cap checked above. Only on an idle
    thread: a run or a job in flight would write its own copy of the summary state back."""
    repository = state_repository_for(conversation)
    values = repository.get_values()
    event = values.get(SUMMARY_EVENT_KEY)
    cutoff = event.get("cutoff_index") if isinstance(event, dict) else None
    if not isinstance(cutoff, int):
        return
    folded = list(values.get("messages") or [])[:cutoff]
    if message.lc_message_id not in {m.id for m in folded}:
        return
    if thread_busy_flags(conversation=conversation)["busy"]:
        raise PinFoldedWhileBusy()
    kept = set(event.get(PINNED_IDS_KEY) or ()) | pinned_closure(folded, [message.lc_message_id])
    update = {SUMMARY_EVENT_KEY: {**event, PINNED_IDS_KEY: [m.id for m in folded if m.id in kept]}}
    # The next request grows by the message: the meter counts it at once (re-estimated, as after an undo).
    agent = conversation.agent
    usage = refreshed_usage(
        values,
        update,
        config=agent.compression_config(),
        result=None,
        now=timezone.now(),
        calibration=calibration_for(agent=agent),
    )
    conversation_pressure_update(
        conversation_id=conversation.pk, token_usage=merge_token_usage(values.get(TOKEN_USAGE_KEY), usage)
    )
    repository.update({**update, TOKEN_USAGE_KEY: usage})


def _message(conversation: Conversation, message_id: int) -> Message:
    message = visible_messages(conversation=conversation).filter(pk=message_id).select_related("pin").first()
    if message is None or not message.lc_message_id:
        raise MessageNotFound()
    return message


def _pinned_tokens(conversation: Conversation, pinned: list[str], *, extra: Message | None = None) -> int:
    """Estimated tokens of the pinned groups as the model sees them (the checkpoint's messages); a
    pinned message not in the checkpoint yet counts as its transcript text."""
    if not pinned:
        return 0
    profile = conversation.agent.compression_config().profile
    messages = thread_state_messages(conversation=conversation)
    ids = pinned_closure(messages, pinned)
    total = messages_tokens([m for m in messages if m.id in ids], profile)
    present = {m.id for m in messages}
    missing = [i for i in pinned if i not in present]
    if missing:
        rows = {m.lc_message_id: m for m in conversation.messages.filter(lc_message_id__in=missing)}
        if extra is not None and extra.lc_message_id in missing:
            rows[extra.lc_message_id] = extra
        total += sum(estimate_message(_as_message(row), profile) for row in rows.values())
    return total


def _as_message(row: Message) -> BaseMessage:
    return HumanMessage(content=row.content, id=row.lc_message_id)
