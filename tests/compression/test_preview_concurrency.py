"""A stale preview on real PostgreSQL under concurrent intake: the apply waits for the row lock that
the intake holds, sees the new message, and folds nothing."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from compression.errors import StalePreview
from compression.models import CompressionRecord
from compression.services import thread_compress, thread_compress_preview
from context_engine.state import SUMMARY_EVENT_KEY
from conversations.models import Message
from conversations.services import NewMessage, message_append, thread_create
from conversations.services.threads import thread_lock
from tests.compression._threads import repository_for, seed_state
from tests.context_engine.chats import conversation_messages
from tests.context_engine.fakes import ScriptedChatModel

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _a_backend_waits_on_a_lock(timeout: float = 10.0) -> bool:
    """Observe the wait itself: a session of this database blocked on a lock (pg_stat_activity)."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return True
            time.sleep(0.05)
    return False


def test_apply_waits_for_a_concurrent_intake_then_answers_stale_preview(user, agent, monkeypatch, settings):
    settings.THREAD_LOCK_TIMEOUT_MS = 15_000
    model = ScriptedChatModel(summaries=["## SESSION INTENT\nnever used"])
    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
    agent.summary_keep_messages = 4
    agent.save()
    thread = thread_create(user=user, agent_slug=agent.slug)
    seed_state(thread, conversation_messages(5))
    preview = thread_compress_preview(thread_id=thread.thread_id, user=user)
    assert preview["status"] == "ready"

    holding, release, results = threading.Event(), threading.Event(), {}

    def intake() -> None:  # what message intake does: append under the row lock, then commit
        try:
            with thread_lock(thread_id=thread.thread_id, user=user) as conversation:
                message_append(
                    conversation=conversation,
                    message=NewMessage(role=Message.Role.USER, content="sent meanwhile"),
                )
                holding.set()
                assert release.wait(20)
        finally:
            connection.close()

    def apply() -> None:
        try:
            results["apply"] = thread_compress(
                thread_id=thread.thread_id, user=user, preview_id=preview["preview_id"]
            )
        except BaseException as exc:  # noqa: BLE001 - asserted below
            results["apply"] = exc
        finally:
            connection.close()

    writer = threading.Thread(target=intake, daemon=True)
    writer.start()
    assert holding.wait(10)
    applier = threading.Thread(target=apply, daemon=True)
    applier.start()
    assert _a_backend_waits_on_a_lock(), "the apply must wait for the row lock the intake holds"
    assert "apply" not in results
    release.set()
    writer.join(10)
    applier.join(20)

    assert isinstance(results["apply"], StalePreview)
    assert SUMMARY_EVENT_KEY not in repository_for(thread).get_values()
    assert model.summary_prompts == []
    assert not CompressionRecord.objects.filter(conversation=thread).exists()
    assert Message.objects.filter(conversation=thread, content="sent meanwhile").exists()
