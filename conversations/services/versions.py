"""Edit and regenerate (issue 26 item 9): a new version of a turn, on a fork of the model's view.

Both fork the thread's checkpoint at the one from before the user message (LangGraph time travel,
``AgentStateRepository.fork_before``) and queue a run on the fork; the transcript stays append-only:
the rows of the replaced branch leave the current branch through a ``MessageFork`` interval and stay
browsable as earlier versions. An edit of a message older than a summary forks from before that
summary too, so the fork carries no summary (nor undo) of messages it no longer has; pins on the
replaced rows stay with them and do not bind the fork.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from agent_platform.runtime.graph import state_repository_for
from conversations import events
from conversations.errors import EmptyMessage, MessageNotEditable, MessageNotFound, ThreadBusy
from conversations.models import AgentRun, Conversation, Message, MessageFork
from conversations.selectors import thread_busy_flags, visible_messages
from conversations.services.agent_switch import agent_set
from conversations.services.dispatch import run_dispatch_next
from conversations.services.intake import (
    MESSAGE_MAX_CHARS,
    SEND,
    IntakeResult,
    operation_key,
    request_id_checked,
    run_open,
    run_retried,
)
from conversations.services.threads import agent_usable, text_checked, thread_lock


def message_edit(
    *,
    thread_id: uuid.UUID | str,
    message_id: int,
    user: AbstractBaseUser,
    content: str,
    request_id: str | None = None,
) -> IntakeResult:
    """Send ``content`` as a new version of the user message ``message_id`` (its attachments kept):
    the message and everything after it leave the current branch, and a run answers the new version
    on the fork from before the original. 409 while a run is queued or running. With ``request_id``,
    a retry returns the first result and makes no second version."""
    content = (content or "").strip()
    if not content:
        raise EmptyMessage()
    text_checked(content, field="message", max_length=MESSAGE_MAX_CHARS)
    request_id = request_id_checked(request_id)
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        retried = run_retried(conversation=conversation, request_id=request_id, kind=MessageFork.Kind.EDIT)
        if retried is not None:
            return retried
        original = _turn_message(conversation, message_id)
        run = run_open(
            conversation=conversation,
            kind=AgentRun.Kind.CHAT,
            content=content,
            request_id=request_id,
            version_of=original.version_of or original,
        )
        edited = run.input_message
        for attachment in original.attachments.all():  # same saved file, a row for the new version
            attachment.pk, attachment.message = None, edited
            attachment.save()
        return _fork(conversation, user, MessageFork.Kind.EDIT, original, run, (original.seq, edited.seq))


def reply_regenerate(
    *,
    thread_id: uuid.UUID | str,
    user: AbstractBaseUser,
    request_id: str | None = None,
    agent_slug: str | None = None,
) -> IntakeResult:
    """Answer the thread's last user message again: its reply leaves the current branch and a run
    answers the same message on the fork from before it. 409 while a run is queued or running. With
    ``request_id``, a retry returns the first result and starts no second run. With ``agent_slug``
    ("regenerate with another agent"), the thread switches to that agent first (404 for one the user
    may not use), so this answer and the turns after it are that agent's."""
    request_id = request_id_checked(request_id)
    agent = agent_usable(agent_slug=agent_slug) if agent_slug else None
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        retried = run_retried(
            conversation=conversation, request_id=request_id, kind=MessageFork.Kind.REGENERATE
        )
        if retried is not None:
            return retried
        last = visible_messages(conversation=conversation).filter(role=Message.Role.USER).last()
        if last is None:
            raise MessageNotEditable(_("There is no reply to regenerate yet."))
        message = _turn_message(conversation, last.pk)
        if agent is not None:
            agent_set(conversation, agent)
        next_seq = (conversation.messages.aggregate(last=Max("seq"))["last"] or 0) + 1
        run = AgentRun.objects.create(
            conversation=conversation,
            kind=AgentRun.Kind.CHAT,
            input_message=message,
            request_id=request_id,
            language=get_language() or "",
        )
        return _fork(
            conversation, user, MessageFork.Kind.REGENERATE, message, run, (message.seq + 1, next_seq)
        )


def turn_retry(
    *, thread_id: uuid.UUID | str, user: AbstractBaseUser, request_id: str | None = None
) -> IntakeResult:
    """Send the request of the thread's last turn again, with a new run, when that turn failed or was
    stopped: the same message, no new version of it. A turn whose message reached the model is retried
    on the fork from before it (its failure notice and partial reply leave the current branch, kept as
    an earlier version, as regenerate does); one the model never saw (stopped in the queue, failed
    before the call) is queued again, its failure notice leaving the branch. 422 when the last turn did
    not fail and was not stopped; 409 while a run is queued or running. With ``request_id``, a retry of
    this request returns the first result and starts no second run."""
    request_id = operation_key("retry", request_id_checked(request_id))
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        retried = run_retried(
            conversation=conversation, request_id=request_id, kind=(MessageFork.Kind.REGENERATE, SEND)
        )
        if retried is not None:
            return retried
        last = conversation.runs.order_by("-pk").first()
        ended = (AgentRun.Status.FAILED, AgentRun.Status.CANCELLED)
        if last is None or last.status not in ended or last.input_message_id is None:
            raise MessageNotEditable(_("There is no failed or stopped turn to retry."))
        message = _turn_message(conversation, last.input_message_id)
        run = AgentRun.objects.create(
            conversation=conversation,
            kind=AgentRun.Kind.CHAT,
            input_message=message,
            request_id=request_id,
            language=get_language() or "",
        )
        next_seq = (conversation.messages.aggregate(last=Max("seq"))["last"] or 0) + 1
        repository = state_repository_for(conversation)
        left = repository.version()
        checkpoint_id = repository.fork_before(message.lc_message_id)
        if checkpoint_id is not None:
            hidden = (message.seq + 1, next_seq)
            forked = (left, checkpoint_id)
            return _fork(conversation, user, MessageFork.Kind.REGENERATE, message, run, hidden, forked)
        return _requeue(conversation, user, message, run, last=last, next_seq=next_seq)


def _requeue(
    conversation: Conversation,
    user: AbstractBaseUser,
    message: Message,
    run: AgentRun,
    *,
    last: AgentRun,
    next_seq: int,
) -> IntakeResult:
    """Queue ``message`` again on an unchanged checkpoint (the model never saw it). The failed run's
    notice, the last rows of the transcript, leaves the current branch as an earlier version."""
    Message.objects.filter(pk=message.pk).update(run=run)  # no longer shown "not sent"
    notice = conversation.messages.filter(run=last, role=Message.Role.SYSTEM).order_by("seq").first()
    if notice is not None:
        MessageFork.objects.create(
            conversation=conversation,
            kind=MessageFork.Kind.REGENERATE,
            message=message,
            run=run,
            hidden_from_seq=notice.seq,
            hidden_to_seq=next_seq,
            created_by=user,
            checkpoint_id="",  # nothing forked: the model's view never held the message
            left_checkpoint_id=state_repository_for(conversation).version(),
        )
    Conversation.objects.filter(pk=conversation.pk).update(last_activity_at=timezone.now())
    events.broadcast(conversation.thread_id, events.RUN_STATUS, run_id=run.pk, status=run.status)
    conversation_id = conversation.pk
    transaction.on_commit(lambda: run_dispatch_next(conversation_id=conversation_id))
    return IntakeResult(message=message, run=run, created=True)


def _turn_message(conversation: Conversation, message_id: int) -> Message:
    """The user message that opened a chat turn on the current branch, with the thread idle."""
    flags = thread_busy_flags(conversation=conversation)
    if flags["interrupted"]:
        raise ThreadBusy(_("The agent is waiting for your answer to its question; answer it first."))
    if flags["busy"]:
        raise ThreadBusy(_("The thread has a run in progress or queued; try again when it is idle."))
    message = visible_messages(conversation=conversation).filter(pk=message_id).select_related("run").first()
    if message is None:
        raise MessageNotFound()
    run = message.run
    if message.role != Message.Role.USER or run is None or run.kind != AgentRun.Kind.CHAT:
        raise MessageNotEditable()
    if run.input_message_id != message.pk:  # the answer to an ask_user question, not a turn
        raise MessageNotEditable(
            _("An answer to the agent's question can't be edited; edit the message before it.")
        )
    return message


def _fork(
    conversation: Conversation,
    user: AbstractBaseUser,
    kind: str,
    message: Message,
    run: AgentRun,
    hidden: tuple[int, int],
    forked: tuple[str, str] | None = None,
) -> IntakeResult:
    """Record the fork, then fork the checkpoint (last: it is outside the transaction, and a refusal
    before it rolls the rows back); the run is dispatched after commit. ``forked``: the latest
    checkpoint before and the one forked from, when the caller forked it."""
    fork = MessageFork(
        conversation=conversation,
        kind=kind,
        message=message,
        run=run,
        hidden_from_seq=hidden[0],
        hidden_to_seq=hidden[1],
        created_by=user,
    )
    Conversation.objects.filter(pk=conversation.pk).update(last_activity_at=timezone.now())
    if forked is None:
        repository = state_repository_for(conversation)
        fork.left_checkpoint_id = repository.version()
        checkpoint_id = repository.fork_before(message.lc_message_id)
    else:
        fork.left_checkpoint_id, checkpoint_id = forked
    if checkpoint_id is None:
        raise MessageNotEditable()
    fork.checkpoint_id = checkpoint_id
    fork.save()
    events.broadcast(conversation.thread_id, events.RUN_STATUS, run_id=run.pk, status=run.status)
    conversation_id = conversation.pk
    transaction.on_commit(lambda: run_dispatch_next(conversation_id=conversation_id))
    return IntakeResult(message=run.input_message, run=run, created=True)
