"""Threads and their transcript: create, soft-delete, the row lock, and appending messages."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import OperationalError, connection, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agent_platform.models import Agent
from context_engine.text import clean_text
from conversations import events
from conversations.errors import AgentNotFound, InvalidInput, ThreadBusy, ThreadNotFound
from conversations.models import AgentRun, Conversation, Message

FAILURE_NOTICE = "This turn failed: {error}"
LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL: lock_timeout expired, or NOWAIT found the row locked
TITLE_MAX_CHARS = 200  # Conversation.title
# The words for the checked fields in error messages (the messages are shown on pages as they are).
FIELD_LABELS = {
    "message": gettext_lazy("message"),
    "answer": gettext_lazy("answer"),
    "title": gettext_lazy("title"),
    "request_id": gettext_lazy("request ID"),
}
AUTO_TITLE_CHARS = 60  # a title made from the first message: its first line, clipped


def text_checked(value: str, *, field: str, max_length: int) -> str:
    """``value`` unchanged, or ``InvalidInput`` when it is too long or holds a NUL character.

    Checked here, not only in the API schemas, so pages and API agree; PostgreSQL cannot store NUL
    and rejects over-long varchars, which would otherwise surface as a 500.
    """
    label = FIELD_LABELS.get(field, field)
    if "\x00" in value:
        raise InvalidInput(_("The %(field)s contains a NUL character.") % {"field": label})
    if len(value) > max_length:
        raise InvalidInput(
            _("The %(field)s is longer than %(max_length)d characters.")
            % {"field": label, "max_length": max_length}
        )
    return value


def thread_create(*, user: AbstractBaseUser, agent_slug: str, title: str = "") -> Conversation:
    title = text_checked(title.strip(), field="title", max_length=TITLE_MAX_CHARS)
    return Conversation.objects.create(owner=user, agent=agent_usable(agent_slug=agent_slug), title=title)


def agent_usable(*, agent_slug: str) -> Agent:
    """The agent a user may start a thread with or switch one to: an enabled one (every signed-in user
    may use every enabled agent); ``AgentNotFound`` (404) for a missing or disabled one."""
    agent = None if "\x00" in agent_slug else Agent.objects.filter(slug=agent_slug, is_enabled=True).first()
    if agent is None:
        raise AgentNotFound()
    return agent


def title_from_message(content: str) -> str:
    """A thread title from its first message: the first non-blank line, spaces collapsed, clipped."""
    line = next((line for line in content.splitlines() if line.strip()), "")
    line = " ".join(line.split())
    return line if len(line) <= AUTO_TITLE_CHARS else line[: AUTO_TITLE_CHARS - 1].rstrip() + "…"


def thread_rename(*, thread_id: uuid.UUID | str, user: AbstractBaseUser, title: str) -> Conversation:
    """Set the thread's title; an empty one restores the automatic title (from the first message, or
    none yet: then the first message names it). Open pages of the thread follow it live."""
    title = text_checked(title.strip(), field="title", max_length=TITLE_MAX_CHARS)
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        if not title:
            first = conversation.messages.filter(role=Message.Role.USER).order_by("seq").first()
            title = title_from_message(first.content) if first is not None else ""
        conversation.title = title
        conversation.save(update_fields=["title", "updated_at"])
        events.broadcast(conversation.thread_id, events.TITLE, title=title)
        return conversation


def _is_postgres() -> bool:
    return connection.vendor == "postgresql"


def _lock_row(queryset, *, nowait: bool, timeout_ms: int | None) -> Conversation:
    """``select_for_update`` the one row of ``queryset``; PostgreSQL waits at most ``timeout_ms``."""
    if not _is_postgres():  # SQLite serializes writers itself; SELECT ... FOR UPDATE is a no-op there
        return queryset.select_for_update().get()
    try:
        with connection.cursor() as cursor:
            previous = None
            if not nowait and timeout_ms is not None:
                cursor.execute("SELECT current_setting('lock_timeout')")
                previous = cursor.fetchone()[0]
                cursor.execute("SELECT set_config('lock_timeout', %s, true)", [f"{int(timeout_ms)}ms"])
            # of=("self",): lock the thread row only, never the joined agent row.
            row = queryset.select_for_update(nowait=nowait, of=("self",)).get()
            if previous is not None:  # only this statement waits bounded; the caller's block is unchanged
                cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])
            return row
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == LOCK_NOT_AVAILABLE:
            raise ThreadBusy() from exc
        raise


@contextmanager
def thread_lock(
    *,
    thread_id: uuid.UUID | str,
    user: AbstractBaseUser,
    nowait: bool = False,
    timeout_ms: int | None = None,
) -> Iterator[Conversation]:
    """Hold the caller's thread row locked (``SELECT ... FOR UPDATE``) for the ``with`` block.

    Opens ``transaction.atomic()``; the lock is released when the block's transaction ends. Raises
    ``ThreadNotFound`` for a missing, deleted or foreign thread (no existence leak) and ``ThreadBusy``
    when the lock is not obtained within ``timeout_ms`` (default ``THREAD_LOCK_TIMEOUT_MS``) or at once
    with ``nowait``.
    """
    timeout = settings.THREAD_LOCK_TIMEOUT_MS if timeout_ms is None else timeout_ms
    with transaction.atomic():
        queryset = Conversation.objects.filter(
            thread_id=thread_id, owner=user, status=Conversation.Status.ACTIVE
        ).select_related("agent")
        try:
            conversation = _lock_row(queryset, nowait=nowait, timeout_ms=timeout)
        except (Conversation.DoesNotExist, ValueError) as exc:
            raise ThreadNotFound() from exc
        yield conversation


@contextmanager
def conversation_lock(*, conversation_id: int, nowait: bool = False) -> Iterator[Conversation]:
    """The row by primary key, whatever its owner or status (run executor, bulk jobs, admin).

    Waits for the lock, or with ``nowait`` raises ``ThreadBusy`` at once if another holds it.
    """
    queryset = Conversation.objects.filter(pk=conversation_id).select_related("agent")
    with transaction.atomic():
        try:
            conversation = _lock_row(queryset, nowait=nowait, timeout_ms=None)
        except Conversation.DoesNotExist as exc:
            raise ThreadNotFound() from exc
        yield conversation


def message_payload(message: Message) -> dict[str, object]:
    return {
        "id": message.pk,
        "seq": message.seq,
        "role": message.role,
        "content": message.content,
        "tool_calls": message.tool_calls,
        "tool_call_id": message.tool_call_id,
        "tool_name": message.tool_name,
        "run_id": message.run_id,
        "interrupted": message.interrupted,
        "created_at": message.created_at.isoformat(),
    }


@dataclass(frozen=True)
class NewMessage:
    """A transcript row to append, as its caller knows it; the thread, the sequence number and the time
    are ``message_append``'s."""

    role: str
    content: str
    run: AgentRun | None = None
    tool_calls: list | None = None
    tool_call_id: str = ""
    tool_name: str = ""
    lc_message_id: str = ""
    interrupted: bool = False
    version_of: Message | None = None


def message_append(*, conversation: Conversation, message: NewMessage) -> Message:
    """Append the next message of the transcript. The caller holds the thread's row lock.

    A NUL character (which PostgreSQL text and JSON columns refuse) and a lone surrogate (which no
    database can encode) are stored as U+FFFD (``context_engine.text``), so a tool result or call
    carrying one is kept rather than failing the run; the checkpoint keeps NUL as it was.
    """
    last = conversation.messages.aggregate(last=Max("seq"))["last"] or 0
    row = Message.objects.create(
        conversation=conversation,
        seq=last + 1,
        role=message.role,
        content=clean_text(message.content),
        run=message.run,
        tool_calls=clean_text(message.tool_calls or []),
        tool_call_id=clean_text(message.tool_call_id or ""),
        tool_name=clean_text(message.tool_name or ""),
        lc_message_id=message.lc_message_id or "",
        interrupted=message.interrupted,
        version_of=message.version_of,
    )
    events.broadcast(conversation.thread_id, events.MESSAGE_CREATED, message=message_payload(row))
    return row


def thread_soft_delete(*, thread_id: uuid.UUID | str, user: AbstractBaseUser) -> None:
    """Hide the thread from its owner, cancel its queued runs and stop its running one; the transcript
    is kept."""
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        now = timezone.now()
        conversation.status, conversation.deleted_at = Conversation.Status.DELETED, now
        conversation.save(update_fields=["status", "deleted_at", "updated_at"])
        conversation.runs.filter(status=AgentRun.Status.QUEUED).update(
            status=AgentRun.Status.CANCELLED, finished_at=now
        )
        # A running run is stopped as Stop does it; its executor sees the request in the database.
        conversation.runs.filter(status=AgentRun.Status.RUNNING, cancel_requested_at__isnull=True).update(
            cancel_requested_at=now
        )


def failure_notice_append(*, run: AgentRun, error: str) -> Message:
    """The transcript's record of a failed run: a system message with the reason, after what it said."""
    with conversation_lock(conversation_id=run.conversation_id) as conversation:
        return message_append(
            conversation=conversation,
            message=NewMessage(role=Message.Role.SYSTEM, content=FAILURE_NOTICE.format(error=error), run=run),
        )
