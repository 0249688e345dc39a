"""Transient database errors during a run (issue 41, item 3): a step whose connection is lost is tried
again on a fresh connection, bounded and with back-off; when it finally fails, transcript and checkpoint
still agree, the user's message in both (or the failure says it was not delivered). The property:
after any injected faults, and the next message on a healthy database, transcript = checkpoint."""

from __future__ import annotations

from collections import Counter

import psycopg
import pytest
from django.db import OperationalError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from agent_platform.runtime.state_repository import AgentStateRepository
from conversations.models import AgentRun, Message
from conversations.services import execution, message_intake
from conversations.services.execution import NOT_DELIVERED
from tests.compression._threads import repository_for
from tests.conversations.consistency import assert_transcript_equals_checkpoint

pytestmark = pytest.mark.django_db

# Where a killed connection shows: the executor's own queries (Django's wrapper) and the checkpoint's
# reads and writes (psycopg's own errors on PostgreSQL; the same class is raised here on SQLite).
SITES = ("snapshot", "transcript", "pressure", "checkpoint_write")


class Faults:
    """Raise at chosen calls of each site: ``plan[site]`` holds the call numbers (from 0) that fail;
    ``kills``: numbers of calls counted across every site (a connection killed once, wherever the run
    then was)."""

    def __init__(
        self, monkeypatch, plan: dict[str, set[int]], *, kills: frozenset[int] = frozenset()
    ) -> None:
        self.plan, self.kills, self.calls, self.raised = plan, kills, Counter(), Counter()
        self.any_call = 0
        self._wrap(monkeypatch, AgentStateRepository, "snapshot", "snapshot", OperationalError)
        self._wrap(monkeypatch, execution, "message_append", "transcript", OperationalError)
        self._wrap(monkeypatch, execution, "conversation_pressure_update", "pressure", OperationalError)
        self._wrap(monkeypatch, AgentStateRepository, "update", "checkpoint_write", psycopg.OperationalError)

    def _wrap(self, monkeypatch, owner, name: str, site: str, error: type[Exception]) -> None:
        original = getattr(owner, name)

        def faulty(*args, **kwargs):
            number, anywhere = self.calls[site], self.any_call
            self.calls[site] += 1
            self.any_call += 1
            if number in self.plan.get(site, ()) or anywhere in self.kills:
                self.raised[site] += 1
                raise error(f"server closed the connection unexpectedly ({site} #{number})")
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, faulty)


def _send(thread, user, content, capture) -> AgentRun:
    with capture(execute=True):
        run = message_intake(thread_id=thread.thread_id, user=user, content=content).run
    run.refresh_from_db()
    return run


def _users_agree(thread) -> list[str]:
    """The transcript's user messages the checkpoint does not hold (each must be a failure that says so)."""
    held = {
        m.id for m in repository_for(thread).get_values().get("messages", []) if isinstance(m, HumanMessage)
    }
    missing = []
    for row in Message.objects.filter(conversation=thread, role=Message.Role.USER).select_related():
        if row.lc_message_id in held:
            continue
        run = AgentRun.objects.filter(input_message=row).first()
        if run is None or run.status != AgentRun.Status.FAILED or run.error != NOT_DELIVERED:
            missing.append(row.content)
    return missing


@pytest.fixture(autouse=True)
def _no_pause(settings):
    settings.RUN_DB_RETRY_SECONDS = 0
    settings.RUN_DB_RETRIES = 3


def test_a_lost_connection_is_retried_and_the_run_succeeds(
    thread, user, scripted_model, monkeypatch, django_capture_on_commit_callbacks
):
    scripted_model(
        psycopg.OperationalError("terminating connection due to administrator command"), "answered"
    )
    faults = Faults(monkeypatch, {"snapshot": {0}, "transcript": {0}})
    run = _send(thread, user, "hello", django_capture_on_commit_callbacks)
    assert run.status == AgentRun.Status.SUCCEEDED, run.error_detail
    assert faults.raised == {"snapshot": 1, "transcript": 1}
    transcript = assert_transcript_equals_checkpoint(thread)
    assert [text for _id, text in transcript] == ["answered"]  # one reply: the retry did not answer twice
    assert _users_agree(thread) == []


def test_retries_are_bounded_and_the_failure_keeps_both_sides_agreeing(
    thread, user, scripted_model, monkeypatch, django_capture_on_commit_callbacks
):
    model = scripted_model(*[psycopg.OperationalError("the connection is lost")] * 4, "answered")
    run = _send(thread, user, "hello", django_capture_on_commit_callbacks)
    assert run.status == AgentRun.Status.FAILED
    assert len(model.calls) == 4  # the first attempt and RUN_DB_RETRIES more, then it gave up
    assert "OperationalError" in run.error_detail
    assert_transcript_equals_checkpoint(thread)
    assert _users_agree(thread) == []  # the message is in the checkpoint too


def test_a_message_the_checkpoint_never_got_is_said_not_delivered(
    thread, user, scripted_model, monkeypatch, django_capture_on_commit_callbacks
):
    scripted_model("answered")
    with monkeypatch.context() as patch:
        Faults(patch, {"snapshot": set(range(20))})  # the checkpoint cannot be read at all
        run = _send(thread, user, "hello", django_capture_on_commit_callbacks)
    assert run.status == AgentRun.Status.FAILED and run.error == NOT_DELIVERED
    notice = thread.messages.get(role=Message.Role.SYSTEM)
    assert NOT_DELIVERED in notice.content
    assert _users_agree(thread) == []


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(kills=st.frozensets(st.integers(0, 14), max_size=3))
def test_after_any_injected_faults_transcript_equals_checkpoint(
    kills, user, agent, scripted_model, monkeypatch, settings, django_capture_on_commit_callbacks
):
    """Up to three connections killed anywhere in a run (each call of the database, the checkpoint's
    included, may be the one): with two retries the run either succeeds or fails having used them all,
    and either way transcript and checkpoint agree at its end, the user's message in both."""
    from conversations.services import thread_create

    settings.RUN_DB_RETRIES = 2
    thread = thread_create(user=user, agent_slug=agent.slug)
    scripted_model(*["answer"] * 4)
    with monkeypatch.context() as patch:
        faults = Faults(patch, {}, kills=kills)
        first = _send(thread, user, "first", django_capture_on_commit_callbacks)
    assert first.status in (AgentRun.Status.SUCCEEDED, AgentRun.Status.FAILED)
    assert first.status == AgentRun.Status.SUCCEEDED or sum(faults.raised.values()) == 3
    assert_transcript_equals_checkpoint(thread)
    assert _users_agree(thread) == []
    # And the thread goes on: the next turn sees the same view.
    second = _send(thread, user, "second", django_capture_on_commit_callbacks)
    assert second.status == AgentRun.Status.SUCCEEDED, second.error_detail
    assert_transcript_equals_checkpoint(thread)
    assert _users_agree(thread) == []
