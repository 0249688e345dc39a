"""A continue racing a send on PostgreSQL (issue 39 item 2): the thread's row lock orders them, and
whichever wins, the model's view is the branch the page shows once both are done."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from agent_platform.errors import ApplicationError
from agent_platform.runtime.graph import state_repository_for
from conversations.models import AgentRun, MessageFork
from conversations.selectors import visible_messages
from conversations.services import message_intake
from conversations.services.branches import branch_continue
from conversations.services.versions import message_edit

pytestmark = [pytest.mark.services, pytest.mark.postgres]


def _said(thread, user, content):
    result = message_intake(thread_id=thread.thread_id, user=user, content=content)
    result.run.refresh_from_db()
    assert result.run.status == AgentRun.Status.SUCCEEDED, result.run.error_detail
    return result.message


def _together(*actions) -> list:
    """Run the actions in threads released together (a connection each); each one's result or error."""
    start, results = threading.Barrier(len(actions), timeout=15), [None] * len(actions)

    def run(index, action):
        start.wait()
        try:
            results[index] = action()
        except Exception as error:  # noqa: BLE001 - the caller reads it
            results[index] = error
        finally:
            connection.close()

    workers = [threading.Thread(target=run, args=(i, a), daemon=True) for i, a in enumerate(actions)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    return results


@pytest.mark.django_db(transaction=True)
def test_a_continue_racing_a_send_leaves_the_model_view_equal_to_the_page(thread, user, settings):
    settings.THREAD_LOCK_TIMEOUT_MS = 30_000
    _said(thread, user, "Alpha one")
    second = _said(thread, user, "Beta two")
    _said(thread, user, "Gamma three")
    edited = message_edit(thread_id=thread.thread_id, message_id=second.pk, user=user, content="Beta edited")
    edited.run.refresh_from_db()
    assert edited.run.status == AgentRun.Status.SUCCEEDED

    continued, sent = _together(
        lambda: branch_continue(thread_id=thread.thread_id, message_id=second.pk, user=user, request_id="c"),
        lambda: message_intake(thread_id=thread.thread_id, user=user, content="Delta four"),
    )
    assert not isinstance(sent, ApplicationError), sent  # a continue never makes a send wait for long
    assert AgentRun.objects.get(pk=sent.run.pk).status == AgentRun.Status.SUCCEEDED
    if isinstance(continued, ApplicationError):  # the send won: its run held the thread
        assert continued.code == "thread_busy"
        assert not MessageFork.objects.filter(kind=MessageFork.Kind.CONTINUE).exists()
    else:
        assert MessageFork.objects.filter(kind=MessageFork.Kind.CONTINUE).count() == 1

    shown = [
        m.lc_message_id for m in visible_messages(conversation=thread).order_by("seq") if m.lc_message_id
    ]
    known = set(thread.messages.values_list("lc_message_id", flat=True))
    view = [m.id for m in state_repository_for(thread).get_values()["messages"] if m.id in known]
    assert view == shown
    texts = [m.content for m in visible_messages(conversation=thread).order_by("seq")]
    assert "Delta four" in texts
    assert ("Gamma three" in texts) == (not isinstance(continued, ApplicationError))


@pytest.mark.django_db(transaction=True)
def test_a_fork_submitted_twice_at_once_makes_one_thread_and_answers_both(thread, user, settings):
    from agent_platform.workdir import workdir_for
    from conversations.models import Conversation
    from conversations.services.branches import branch_fork

    _said(thread, user, "Alpha one")
    reply = visible_messages(conversation=thread).filter(role="assistant").order_by("-seq").first()
    workdir_for(thread).write_text("uploads/abc-notes.txt", "kept")

    def fork():
        return branch_fork(thread_id=thread.thread_id, message_id=reply.pk, user=user, request_id="twice")

    first, second = _together(fork, fork)
    assert not isinstance(first, BaseException) and not isinstance(second, BaseException), (first, second)
    assert first.conversation.pk == second.conversation.pk
    assert sorted([first.created, second.created]) == [False, True]
    assert Conversation.objects.filter(owner=user).count() == 2  # the source and one fork
    assert workdir_for(first.conversation).read_text("uploads/abc-notes.txt") == "kept"
