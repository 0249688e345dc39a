"""Reads of a thread's branches: the whole branch a version belongs to, each row numbered as shown
(1..n along the branch, so no number the page shows has a hole)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conversations.branching import branch_holding
from conversations.errors import MessageNotFound
from conversations.models import Conversation, Message
from conversations.selectors import branch_messages, messages_with_pins, thread_branches, visible_messages


@dataclass(frozen=True)
class BranchView:
    number: int  # ``conversations.branching``'s number of the branch
    current: bool  # the thread's current branch (what the model reads)
    message: Message  # the message it was asked for
    messages: list[Message]  # the whole branch, in reading order, each with ``number``


def message_branch(*, conversation: Conversation, message_id: int) -> BranchView:
    """The latest branch holding ``message_id`` (the current one when it holds it), whole: every
    message and tool call of that version, read-only."""
    message = conversation.messages.filter(pk=message_id).first()
    if message is None:
        raise MessageNotFound()
    branches = thread_branches(conversation=conversation)
    number = branch_holding(branches, message.seq)
    if number is None:
        raise MessageNotFound()
    rows = list(
        messages_with_pins(branch_messages(conversation=conversation, branch=branches[number]))
        .select_related("run", "usage")
        .prefetch_related("attachments__conversation")
        .order_by("seq")
    )
    for position, row in enumerate(rows, 1):
        row.number = position
    return BranchView(number, number == len(branches) - 1, next(r for r in rows if r.pk == message.pk), rows)


def numbers_annotate(*, conversation: Conversation, messages: Sequence[Message]) -> Sequence[Message]:
    """Set ``number`` on consecutive messages of the current branch, in the order given (the page's
    reading order): their place on it (1..n), the number the page shows; one count query."""
    if messages:
        first = min(message.seq for message in messages)
        before = visible_messages(conversation=conversation).filter(seq__lt=first).count()
        for position, message in enumerate(messages, before + 1):
            message.number = position
    return messages


def branch_number_of(*, conversation: Conversation, seq: int | None) -> int | None:
    """The number the page shows for the current branch's message ``seq`` (None for None)."""
    if seq is None:
        return None
    return visible_messages(conversation=conversation).filter(seq__lte=seq).count()


def branch_numbers(*, conversation: Conversation, seqs: Sequence[int]) -> dict[int, int]:
    """The numbers the page shows for seqs of the current branch (one query for the branch's seqs)."""
    if not seqs:
        return {}
    wanted = set(seqs)
    shown = visible_messages(conversation=conversation).filter(seq__lte=max(wanted)).order_by("seq")
    return {seq: n for n, seq in enumerate(shown.values_list("seq", flat=True), 1) if seq in wanted}
