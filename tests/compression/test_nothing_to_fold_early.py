"""A compression job with nothing to fold (issue 41, item 2) is decided before it claims the thread:
from the checkpoint's stored estimates, with no model call and no lock. It is recorded ended
(``no_change``, with its audit record) and never holds the thread, so no send is refused meanwhile.
A job that would fold, or whose checkpoint moved after the early decision, is queued as before."""

from __future__ import annotations

import pytest
from django.db import connection

from compression.models import CompressionJob, CompressionRecord
from compression.services import jobs
from compression.services.compress import thread_compress_submit
from conversations.models import AgentRun
from conversations.selectors import thread_busy_flags
from tests.compression._threads import say, seed_state
from tests.context_engine.chats import conversation_messages

pytestmark = pytest.mark.django_db


@pytest.fixture
def decisions(monkeypatch):
    """Every early decision: the transaction depth it was made at, whether the thread was held then,
    and what it decided. ``before(conversation)`` runs first, when set (a change racing the decision)."""
    made: list[dict] = []
    decide = jobs.forced_nothing_to_do
    hooks: dict = {}

    def watched(conversation, values, calibration):
        if "before" in hooks:
            hooks.pop("before")(conversation)
        decided = decide(conversation, values, calibration)
        flags = thread_busy_flags(conversation=conversation)
        made.append({"depth": len(connection.atomic_blocks), "busy": flags["busy"], "decided": decided})
        return decided

    monkeypatch.setattr(jobs, "forced_nothing_to_do", watched)
    return made, hooks


@pytest.fixture
def model_calls(monkeypatch):
    asked: list = []

    def chat_model_for(agent):
        asked.append(agent)
        from tests.context_engine.fakes import ScriptedChatModel

        return ScriptedChatModel(summaries=["## SESSION INTENT\nfolded"])

    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", chat_model_for)
    return asked


def test_nothing_to_fold_ends_the_job_before_it_holds_the_thread(
    user, thread, decisions, model_calls, django_capture_on_commit_callbacks
):
    made, _hooks = decisions
    seed_state(thread, conversation_messages(1))  # 4 messages, all kept: nothing to fold
    depth = len(connection.atomic_blocks)  # the test's own transaction

    job = thread_compress_submit(thread_id=thread.thread_id, user=user)

    assert len(made) == 1 and made[0]["decided"] is not None
    assert made[0]["depth"] == depth, "decided under a lock"
    assert made[0]["busy"] is False, "the thread was held while deciding"
    job.refresh_from_db()
    assert job.status == CompressionJob.Status.NO_CHANGE and job.finished_at is not None
    assert job.attempts == 0 and job.worker == ""  # never claimed, never queued
    assert model_calls == []
    record = job.record
    assert record.status == CompressionRecord.Status.NO_OP and record.reason == "insufficient_history"
    assert job.result == record.result and record.outcome == "no_change_needed"
    # The thread is free at once: a send is not refused.
    run = say(user, thread, "still here?", django_capture_on_commit_callbacks)
    assert run.status == AgentRun.Status.SUCCEEDED, run.error


def test_a_job_that_would_fold_is_queued_and_folds(user, thread, decisions, model_calls):
    made, _hooks = decisions
    seed_state(thread, conversation_messages(5))
    job = thread_compress_submit(thread_id=thread.thread_id, user=user)
    assert len(made) == 1 and made[0]["decided"] is None
    job.refresh_from_db()
    assert job.attempts == 1 and job.status == CompressionJob.Status.SUCCEEDED
    assert model_calls == [thread.agent]


def test_a_checkpoint_that_moved_after_the_early_decision_gets_a_real_job(
    user, thread, decisions, model_calls
):
    made, hooks = decisions
    seed_state(thread, conversation_messages(1))
    # The checkpoint was read for the decision; messages arrive before the job is recorded.
    hooks["before"] = lambda conversation: seed_state(conversation, conversation_messages(5)[4:])
    job = thread_compress_submit(thread_id=thread.thread_id, user=user)
    assert len(made) == 1 and made[0]["decided"] is not None  # decided on what it had read
    job.refresh_from_db()
    assert job.attempts == 1, "the early no-op was kept on a checkpoint that had moved"
    assert job.status == CompressionJob.Status.SUCCEEDED and model_calls == [thread.agent]
