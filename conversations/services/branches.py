"""Branches (issue 39 item 2): make an earlier branch current again, or copy one into a new thread.

Both leave the transcript as it is (append-only). A continue records a ``MessageFork`` of kind
``CONTINUE`` naming the branch (``conversations.branching``) and copies the checkpoint that held that
branch's model view as the thread's latest, so what the model reads next is what the page shows.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _

from agent_platform.runtime.graph import state_repository_for
from agent_platform.runtime.state_repository import AgentStateRepository
from agent_platform.workdir import WorkdirFileNotFound, WorkdirPathError, workdir_for
from context_engine.errors import StoreError
from context_engine.state import TOKEN_USAGE_KEY
from conversations import events
from conversations.branching import branch_holding, branch_holds
from conversations.errors import BranchNotRestorable, MessageNotFound, ThreadBusy
from conversations.models import Conversation, Message, MessageFork
from conversations.receivers import workdir_purge
from conversations.selectors import branch_messages, thread_branches, thread_busy_flags, thread_get
from conversations.services.intake import operation_key, request_id_checked
from conversations.services.pressure import conversation_pressure_update
from conversations.services.threads import TITLE_MAX_CHARS, agent_usable, text_checked, thread_lock

# The message fields a fork copies (a new row of the new thread: no run, no version, no pin).
COPIED_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "tool_name", "lc_message_id", "interrupted")


@dataclass(frozen=True)
class BranchContinued:
    conversation: Conversation
    message: Message  # the message whose version was chosen
    branch: int  # the number of the branch now current (``conversations.branching``)
    created: bool  # False: it was current already, or this request_id's first answer


def branch_continue(
    *,
    thread_id: uuid.UUID | str,
    message_id: int,
    user: AbstractBaseUser,
    request_id: str | None = None,
) -> BranchContinued:
    """Make the latest branch that holds ``message_id`` the thread's current one: the transcript shows
    it, and the model's view is the checkpoint that held it (422 ``branch_not_restorable`` when none
    did). Owner only; 409 ``thread_busy`` while a run is queued, running or waiting on a question, or
    a compression job holds the thread. With ``request_id``, a retry returns the first answer."""
    key = operation_key("continue", request_id_checked(request_id))
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        message = conversation.messages.filter(pk=message_id).first()
        if message is None:
            raise MessageNotFound()
        first = conversation.forks.filter(request_id=key).first() if key else None
        if first is not None:
            return BranchContinued(conversation, message, first.restored_branch or 0, created=False)
        _require_idle(conversation)
        branches = thread_branches(conversation=conversation)
        number = branch_holding(branches, message.seq)
        if number is None:  # every row is on some branch; a defensive answer, not a 500
            raise MessageNotFound()
        if number == len(branches) - 1:
            return BranchContinued(conversation, message, number, created=False)
        rows = list(branch_messages(conversation=conversation, branch=branches[number]).order_by("seq"))
        repository = state_repository_for(conversation)
        checkpoint_id = _checkpoint_of(
            conversation, rows, repository, known_left=_left_of(conversation, number)
        )
        if checkpoint_id is None:
            raise BranchNotRestorable()
        left_checkpoint_id = repository.version()
        next_seq = (conversation.messages.aggregate(last=Max("seq"))["last"] or 0) + 1
        left = branch_messages(conversation=conversation, branch=branches[-1]).values_list("seq", flat=True)
        MessageFork.objects.create(
            conversation=conversation,
            kind=MessageFork.Kind.CONTINUE,
            message=message,
            restored_branch=number,
            hidden_from_seq=next((seq for seq in left if not branch_holds(branches[number], seq)), next_seq),
            hidden_to_seq=next_seq,
            checkpoint_id=checkpoint_id,
            left_checkpoint_id=left_checkpoint_id,
            request_id=key,
            created_by_id=user.pk,
        )
        Conversation.objects.filter(pk=conversation.pk).update(last_activity_at=timezone.now())
        conversation_pressure_update(
            conversation_id=conversation.pk,
            token_usage=repository.values_at(checkpoint_id).get(TOKEN_USAGE_KEY),  # what the copy holds
        )
        # Last: the checkpoint is outside the transaction (a failure before it rolls the rows back).
        repository.fork_at(checkpoint_id)
        events.broadcast(conversation.thread_id, events.STATE, reason="branch_continued", branch=number)
        return BranchContinued(conversation, message, number, created=True)


def _left_of(conversation: Conversation, number: int) -> str:
    """The checkpoint recorded as the model's view of branch ``number`` when it was left ("" if none)."""
    forks = conversation.forks.order_by("id").values_list("left_checkpoint_id", flat=True)
    return (forks[number : number + 1] or [""])[0] or ""


def _checkpoint_of(
    conversation: Conversation, rows: list[Message], repository: AgentStateRepository, *, known_left: str = ""
) -> str | None:
    """The checkpoint whose messages are exactly ``rows``' (by the transcript's ids): the one recorded
    when the branch was left, checked with one read, else the newest in the thread's whole history."""
    ids = [row.lc_message_id for row in rows if row.lc_message_id]
    known = set(conversation.messages.exclude(lc_message_id="").values_list("lc_message_id", flat=True))
    if known_left:
        messages = repository.values_at(known_left).get("messages") or []
        if [m.id for m in messages if getattr(m, "id", None) in known] == ids:
            return known_left
    return repository.checkpoint_matching(ids, known)


def _require_idle(conversation: Conversation) -> None:
    flags = thread_busy_flags(conversation=conversation)
    if flags["interrupted"]:
        raise ThreadBusy(_("The agent is waiting for your answer to its question; answer it first."))
    if flags["busy"]:
        raise ThreadBusy(
            _("The thread has a run or a compression in progress or queued; try again when it is idle.")
        )


@dataclass(frozen=True)
class BranchForked:
    conversation: Conversation  # the new thread
    copied: int  # messages copied
    created: bool  # False: a retry of the same request_id


def branch_fork(
    *,
    thread_id: uuid.UUID | str,
    message_id: int,
    user: AbstractBaseUser,
    request_id: str | None = None,
    title: str | None = None,
) -> BranchForked:
    """A new thread of ``user``'s own holding the branch that holds ``message_id`` up to it (and its
    tool results, when it calls tools): the messages, their attachments, the source's workdir files
    (uploads, saved tool results, history files: every path a copied message or summary names), and
    the checkpoint that held exactly that view, so the new thread's model reads what its page shows.
    Whoever may read the thread may fork it (the owner, a named share, staff with the view
    permission); 422 ``branch_not_restorable`` when no checkpoint held that view, 404
    ``agent_not_found`` when the thread's agent was disabled (no new thread may use it). With
    ``request_id``, a retry (or a twin submitted at once) returns the first thread; a failure leaves
    no thread and no copied file."""
    key = operation_key("fork", request_id_checked(request_id))
    title = text_checked((title or "").strip(), field="title", max_length=TITLE_MAX_CHARS)
    source = thread_get(thread_id=thread_id, user=user)
    if key and (first := Conversation.objects.filter(owner_id=user.pk, fork_request_id=key).first()):
        return BranchForked(first, first.messages.count(), created=False)
    agent_usable(agent_slug=source.agent.slug)  # a new thread, so an agent one may start a thread with
    rows = _fork_rows(source, message_id)
    source_state = state_repository_for(source)
    # Up to the last message of the current branch: its latest checkpoint, checked with one read.
    checkpoint_id = _checkpoint_of(source, rows, source_state, known_left=source_state.version())
    if checkpoint_id is None:
        raise BranchNotRestorable(
            _("The agent's memory of this point was not kept, so it can't be forked; choose another message.")
        )
    values = source_state.values_at(checkpoint_id)
    title = title or _fork_title(source)
    new_id = uuid.uuid4()
    try:
        thread = _fork_write(source, user, rows, values, thread_id=new_id, title=title, key=key)
    except Exception as error:
        workdir_purge(thread_id=str(new_id))  # the files copied for a thread that was never made
        # The same request_id, submitted twice at once: the other submission made the thread.
        twin = Conversation.objects.filter(owner_id=user.pk, fork_request_id=key).first() if key else None
        if isinstance(error, IntegrityError) and twin is not None:
            return BranchForked(twin, twin.messages.count(), created=False)
        raise
    return BranchForked(thread, len(rows), created=True)


def _fork_title(source: Conversation) -> str:
    """ "<source title> (fork)", the source's title clipped so that the whole fits the column."""
    room = TITLE_MAX_CHARS - len(_("%(title)s (fork)") % {"title": ""})
    base = source.title or _("Untitled thread")
    if len(base) > room:
        base = base[: room - 1].rstrip() + "…"
    return _("%(title)s (fork)") % {"title": base}


def _fork_write(
    source: Conversation,
    user: AbstractBaseUser,
    rows: list[Message],
    values: dict,
    *,
    thread_id: uuid.UUID,
    title: str,
    key: str | None,
) -> Conversation:
    """The new thread, its copied rows and files, and its checkpoint (the caller cleans up a failure)."""
    with transaction.atomic():
        thread = Conversation.objects.create(
            thread_id=thread_id,
            owner_id=user.pk,
            agent=source.agent,
            title=title,
            forked_from=rows[-1],
            fork_request_id=key,
        )
        for seq, row in enumerate(rows, 1):
            copy = Message.objects.create(
                conversation=thread, seq=seq, **{name: getattr(row, name) for name in COPIED_FIELDS}
            )
            for attachment in row.attachments.all():  # the same file, copied below with the workdir
                attachment.pk, attachment.message, attachment.conversation = None, copy, thread
                attachment.save()
        _workdir_copy(source, thread)
        conversation_pressure_update(conversation_id=thread.pk, token_usage=values.get(TOKEN_USAGE_KEY))
        # Last: the checkpoint is outside the transaction (a failure before it leaves none behind).
        state_repository_for(thread).update(values)
    return thread


def _fork_rows(source: Conversation, message_id: int) -> list[Message]:
    """The rows a fork copies: the branch holding ``message_id`` up to it, and the results of the tool
    calls it makes (a call without its results is a view no model accepts)."""
    message = source.messages.filter(pk=message_id).first()
    branches = thread_branches(conversation=source)
    number = branch_holding(branches, message.seq) if message is not None else None
    if message is None or number is None:
        raise MessageNotFound()
    branch = list(
        branch_messages(conversation=source, branch=branches[number])
        .prefetch_related("attachments")
        .order_by("seq")
    )
    end = next(i for i, row in enumerate(branch) if row.pk == message.pk) + 1
    calls = {call.get("id") for call in message.tool_calls or [] if isinstance(call, dict)}
    while end < len(branch) and branch[end].role == Message.Role.TOOL and branch[end].tool_call_id in calls:
        end += 1
    return branch[:end]


def _workdir_copy(source: Conversation, thread: Conversation) -> None:
    """Every file of the source thread's workdir, copied into the new thread's."""
    source_dir, target_dir = workdir_for(source), workdir_for(thread)
    pending = ["."]
    while pending:
        try:
            entries = source_dir.list_dir(pending.pop())
        except StoreError:
            continue  # nothing written yet
        for entry in entries:
            if entry.endswith("/"):
                pending.append(entry.rstrip("/"))
            else:
                try:
                    data = source_dir.read_bytes(entry)
                except (WorkdirPathError, WorkdirFileNotFound):
                    continue  # a link out of the workdir (never followed), or a file gone meanwhile
                target_dir.write_bytes(entry, data)
