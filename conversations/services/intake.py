"""Message intake and resume: append to the transcript and enqueue a run, under the thread's row lock."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from conversations import events
from conversations.errors import EmptyMessage, InvalidRequestId, NotInterrupted, RequestIdReused, ThreadBusy
from conversations.models import AgentRun, Conversation, Message
from conversations.selectors import run_latest, thread_in_maintenance
from conversations.services.attachments import CheckedUpload, Upload, attachments_check, attachments_save
from conversations.services.dispatch import run_dispatch_next
from conversations.services.threads import (
    NewMessage,
    message_append,
    text_checked,
    thread_lock,
    title_from_message,
)

MESSAGE_MAX_CHARS = 100_000
REQUEST_ID_MAX_CHARS = 100  # AgentRun.request_id


@dataclass(frozen=True)
class IntakeResult:
    message: Message
    run: AgentRun
    created: bool  # False when a retried request_id returned the first result


# The kinds of request a ``request_id`` makes idempotent; a key is one request's, of one kind.
SEND = "send"


def request_id_checked(request_id: str | None) -> str | None:
    """A client's idempotency key, checked (empty means none; blank space alone is refused, 400)."""
    if request_id:
        if not request_id.strip():
            raise InvalidRequestId()
        text_checked(request_id, field="request_id", max_length=REQUEST_ID_MAX_CHARS)
    return request_id or None


def operation_key(operation: str, request_id: str | None) -> str | None:
    """The stored key of an operation whose runs look like another's (a retry's run is a regenerate's
    fork or a plain queued run): a client's key named apart, within the column's 100 characters, so a
    send's or a regenerate's key never returns a retry's run, nor the other way round."""
    if not request_id:
        return None
    return f"{operation}:{hashlib.sha256(request_id.encode()).hexdigest()[:40]}"


def run_retried(
    *, conversation: Conversation, request_id: str | None, kind: str | tuple[str, ...]
) -> IntakeResult | None:
    """The first result of a request of ``kind`` (``SEND``, or a ``MessageFork.Kind``; a tuple where an
    operation's runs may be either) retried with the same ``request_id`` (under the thread's lock). The
    key taken by a request of another kind is ``RequestIdReused`` (409), never that request's result."""
    if not request_id:
        return None
    first = conversation.runs.filter(request_id=request_id).select_related("input_message", "fork").first()
    if first is None:
        return None
    fork = getattr(first, "fork", None)
    kinds = (kind,) if isinstance(kind, str) else kind
    if (fork.kind if fork is not None else SEND) not in kinds:
        raise RequestIdReused()
    return IntakeResult(message=first.input_message, run=first, created=False)


def run_open(
    *,
    conversation: Conversation,
    kind: str,
    content: str,
    request_id: str | None,
    resume_value: object = None,
    version_of: Message | None = None,
) -> AgentRun:
    """A run and the user message it answers (``run.input_message``), under the thread's lock."""
    run = AgentRun.objects.create(
        conversation=conversation,
        kind=kind,
        request_id=request_id,
        resume_value=resume_value,
        language=get_language() or "",  # the page's: the offline model answers in it
    )
    run.input_message = message_append(
        conversation=conversation,
        message=NewMessage(
            role=Message.Role.USER,
            content=content,
            run=run,
            lc_message_id=f"user-{uuid.uuid4()}",
            version_of=version_of,
        ),
    )
    run.save(update_fields=["input_message"])
    return run


def _enqueue(
    *,
    conversation: Conversation,
    content: str,
    kind: str,
    request_id: str | None,
    resume_value: object = None,
    attachments: Sequence[CheckedUpload] = (),
) -> IntakeResult:
    # A compression job holds the thread between its claim and its apply without holding the row lock:
    # a message is refused openly (409) rather than queued behind it or waited for.
    if thread_in_maintenance(conversation=conversation):
        raise ThreadBusy(_("The thread's context is being compressed; send your message when it is done."))
    run = run_open(
        conversation=conversation,
        kind=kind,
        content=content,
        request_id=request_id,
        resume_value=resume_value,
    )
    message = run.input_message
    attachments_save(conversation=conversation, message=message, checked=attachments)
    changes: dict[str, object] = {"last_activity_at": timezone.now()}
    if not conversation.title:  # an untitled thread is named after its first message
        changes["title"] = conversation.title = title_from_message(content)
    Conversation.objects.filter(pk=conversation.pk).update(**changes)
    events.broadcast(conversation.thread_id, events.RUN_STATUS, run_id=run.pk, status=run.status)
    if "title" in changes:
        events.broadcast(conversation.thread_id, events.TITLE, title=conversation.title)
    conversation_id = conversation.pk
    transaction.on_commit(lambda: run_dispatch_next(conversation_id=conversation_id))
    return IntakeResult(message=message, run=run, created=True)


def message_intake(
    *,
    thread_id: uuid.UUID | str,
    user: AbstractBaseUser,
    content: str,
    request_id: str | None = None,
    attachments: Sequence[Upload] = (),
) -> IntakeResult:
    """Append the user's message and queue a run for it; runs execute one at a time, FIFO.

    Holds the thread's row lock (bounded wait, then ``ThreadBusy``) only for the append; while a
    compression job holds the thread, answers ``ThreadBusy`` at once. With ``request_id``, a retry returns the first result and queues nothing. The run is
    dispatched after commit. If the thread is waiting on ``ask_user``, that run takes this message as
    the answer. ``attachments`` are checked before the lock is taken and saved under it.
    """
    content = (content or "").strip()
    if not content and not attachments:
        raise EmptyMessage()
    checked = attachments_check(uploads=attachments)
    text_checked(content, field="message", max_length=MESSAGE_MAX_CHARS)
    request_id = request_id_checked(request_id)
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        if (first := run_retried(conversation=conversation, request_id=request_id, kind=SEND)) is not None:
            return first
        return _enqueue(
            conversation=conversation,
            content=content,
            kind=AgentRun.Kind.CHAT,
            request_id=request_id,
            attachments=checked,
        )


def run_resume(*, thread_id: uuid.UUID | str, user: AbstractBaseUser, answer: str) -> IntakeResult:
    """Answer the thread's pending ``ask_user`` question: only when its latest run is ``interrupted``."""
    answer = (answer or "").strip()
    if not answer:
        raise EmptyMessage(_("The answer is empty."))
    text_checked(answer, field="answer", max_length=MESSAGE_MAX_CHARS)
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        latest = run_latest(conversation=conversation)
        if latest is None or latest.status != AgentRun.Status.INTERRUPTED:
            raise NotInterrupted()
        return _enqueue(
            conversation=conversation,
            content=answer,
            kind=AgentRun.Kind.RESUME,
            request_id=None,
            resume_value=answer,
        )
