"""Reads of a thread's versions (edits and regenerations): which messages of the current branch have
earlier versions, and what each version holds. The rows are never rewritten (``MessageFork``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from conversations.errors import MessageNotFound
from conversations.models import AgentRun, Conversation, Message, MessageFork
from conversations.selectors import visible_messages

EDIT, REGENERATE = "edit", "regenerate"


@dataclass
class Version:
    number: int  # 1-based, oldest first
    message: Message | None  # the user message (edits); None for a reply version
    replies: list[Message] = field(default_factory=list)  # the rows its run appended
    current: bool = False


@dataclass
class VersionSet:
    kind: str  # EDIT: versions of a user message; REGENERATE: versions of the reply to one
    versions: list[Version]

    @property
    def total(self) -> int:
        return len(self.versions)

    @property
    def current(self) -> int:
        return next(v.number for v in self.versions if v.current)


def _replies(run_id: int | None, *, exclude: int | None = None) -> list[Message]:
    if run_id is None:
        return []
    return list(Message.objects.filter(run_id=run_id).exclude(pk=exclude).order_by("seq"))


def edit_versions(*, message: Message) -> VersionSet | None:
    """The versions of a user message (itself among them), oldest first; None when it has one."""
    root_id = message.version_of_id or message.pk
    group = list(Message.objects.filter(pk=root_id)) + list(
        Message.objects.filter(version_of_id=root_id).order_by("seq")
    )
    if len(group) < 2:
        return None
    return VersionSet(
        EDIT,
        [
            Version(i, row, _replies(row.run_id, exclude=row.pk), current=row.pk == message.pk)
            for i, row in enumerate(group, 1)
        ],
    )


def reply_versions(*, message: Message, current_run_id: int | None) -> VersionSet | None:
    """The versions of the reply to user message ``message``: one per chat run it opened."""
    runs = list(
        AgentRun.objects.filter(input_message=message, kind=AgentRun.Kind.CHAT)
        .order_by("id")
        .values_list("pk", flat=True)
    )
    if message.run_id and message.run_id not in runs:
        runs.insert(0, message.run_id)
    if len(runs) < 2:
        return None
    return VersionSet(
        REGENERATE,
        [
            Version(i, None, _replies(run_id, exclude=message.pk), current=run_id == current_run_id)
            for i, run_id in enumerate(runs, 1)
        ],
    )


def versions_annotate(*, messages: Sequence[Message]) -> Sequence[Message]:
    """Set ``versions`` on the messages of a page that show a version switcher (‹ 1/2 ›): an edited
    user message, and the first reply row of a regenerated answer. Two queries when nothing was forked."""
    if not messages:
        return messages
    conversation_id = messages[0].conversation_id
    edited = set(
        Message.objects.filter(conversation_id=conversation_id, version_of__isnull=False).values_list(
            "version_of_id", flat=True
        )
    )
    regenerated = set(
        MessageFork.objects.filter(
            conversation_id=conversation_id, kind=MessageFork.Kind.REGENERATE
        ).values_list("message_id", flat=True)
    )
    seen_runs: set[int | None] = set()
    for message in messages:
        if message.role == Message.Role.USER:
            if (message.version_of_id or message.pk) in edited:
                message.versions = edit_versions(message=message)
            continue
        asked = message.run.input_message_id if message.run_id else None
        if asked in regenerated and message.run_id not in seen_runs:
            seen_runs.add(message.run_id)
            message.versions = reply_versions(
                message=Message.objects.get(pk=asked), current_run_id=message.run_id
            )
    return messages


def message_versions(*, conversation: Conversation, message_id: int) -> dict[str, object]:
    """A user message's versions and its reply's (any row of the thread, earlier versions too)."""
    message = conversation.messages.filter(pk=message_id, role=Message.Role.USER).first()
    if message is None:
        raise MessageNotFound()
    current = (
        visible_messages(conversation=conversation)
        .filter(seq__gt=message.seq)
        .exclude(role=Message.Role.USER)
        .first()
    )
    current_run = current.run_id if current is not None else message.run_id
    return {
        "message_id": message.pk,
        "edits": _as_out(edit_versions(message=message)),
        "replies": _as_out(reply_versions(message=message, current_run_id=current_run)),
    }


def _as_out(found: VersionSet | None) -> dict[str, object] | None:
    if found is None:
        return None
    return {
        "total": found.total,
        "current": found.current if any(v.current for v in found.versions) else 0,
        "versions": [vars(v) for v in found.versions],
    }
