"""A run whose PostgreSQL connections are killed (``pg_terminate_backend``) while its model answers
(issue 41, item 3): the executor's Django connection and the checkpointer's pooled ones die at once;
the run tries its step again on fresh connections and succeeds, and transcript = checkpoint, the user's
messages in both."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection
from langchain_core.messages import HumanMessage

from agent_platform.runtime.checkpointer import postgres_conninfo
from conversations.models import AgentRun, Message
from conversations.services import message_intake
from tests.compression._threads import repository_for
from tests.conversations.conftest import ScriptedChatModel
from tests.conversations.consistency import assert_transcript_equals_checkpoint

pytestmark = [pytest.mark.postgres, pytest.mark.services]

KILL_OTHERS = (
    "SELECT count(pg_terminate_backend(pid)) AS killed FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


@pytest.fixture
def killing_model(monkeypatch, scripted_model):
    """The agent's model kills every other connection to the test database while it answers a message
    the first time."""
    kills: list[int] = []
    killed_during: set[str] = set()
    answer = ScriptedChatModel._next

    def next_killing(self, messages):
        said = [m.content for m in messages if isinstance(m, HumanMessage)][-1]
        if said not in killed_during:  # once per message: the retry's model call answers
            killed_during.add(said)
            with psycopg.connect(postgres_conninfo(), autocommit=True) as killer:
                kills.append(killer.execute(KILL_OTHERS).fetchone()[0])
        return answer(self, messages)

    monkeypatch.setattr(ScriptedChatModel, "_next", next_killing)
    # A model step whose checkpoint write was killed is made again: the same answer each time.
    scripted_model(*["answer"] * 6)
    return kills


@pytest.mark.django_db(transaction=True)
def test_runs_survive_their_connections_being_killed(thread, user, settings, killing_model):
    settings.RUN_DB_RETRY_SECONDS = 0.05
    for content in ("first", "second"):
        run = message_intake(thread_id=thread.thread_id, user=user, content=content).run
        run.refresh_from_db()
        assert run.status == AgentRun.Status.SUCCEEDED, run.error_detail
    assert len(killing_model) == 2 and all(
        killed >= 1 for killed in killing_model
    )  # the executor's, at least
    transcript = assert_transcript_equals_checkpoint(thread)
    assert [text for _id, text in transcript] == ["answer", "answer"]  # one reply per message
    held = {m.id for m in repository_for(thread).get_values()["messages"] if isinstance(m, HumanMessage)}
    users = set(
        Message.objects.filter(conversation=thread, role=Message.Role.USER).values_list(
            "lc_message_id", flat=True
        )
    )
    assert users == held and len(users) == 2
    connection.close()
