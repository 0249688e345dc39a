"""Manual compression as a job against message intake, on real PostgreSQL with real threads and
connections: the row lock is held to claim and to apply, never while the summary is written."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from compression.errors import IdempotencyConflict, ThreadChanged
from compression.models import CompressionJob, CompressionRecord
from compression.services import thread_compress
from conversations.errors import ThreadBusy
from conversations.models import Message
from conversations.selectors import thread_compressing
from conversations.services import message_intake
from tests.compression._threads import repository_for, seed_state
from tests.context_engine.chats import conversation_messages
from tests.context_engine.fakes import ScriptedChatModel

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

HELD_SECONDS = 5.0


@pytest.fixture
def gated(monkeypatch):
    model = ScriptedChatModel(summaries=["## SESSION INTENT\ncompressed while nothing was locked"] * 2)
    started, gate = threading.Event(), threading.Event()
    original = model._generate

    def generate(messages, stop=None, run_manager=None, **kwargs):
        started.set()
        assert gate.wait(30), "the test never opened the gate"
        return original(messages, stop=stop, run_manager=run_manager, **kwargs)

    object.__setattr__(model, "_generate", generate)
    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
    return model, started, gate


@pytest.fixture
def thread(make_thread):
    """An idle thread with five turns of history: enough to summarize."""
    return make_thread("Busy thread")


def _run(target, results: dict, key: str) -> threading.Thread:
    def body():
        try:
            results[key] = target()
        except BaseException as exc:  # noqa: BLE001 - asserted by the test
            results[key] = exc
        finally:
            connection.close()

    worker = threading.Thread(target=body, daemon=True)
    worker.start()
    return worker


def _holders_of_the_thread_table() -> list[tuple]:
    """Other backends holding any lock on the Conversation table, or idle inside a transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT l.pid, l.mode FROM pg_locks l WHERE l.relation = 'conversations_conversation'::regclass "
            "AND l.pid <> pg_backend_pid()"
        )
        locks = cursor.fetchall()
        cursor.execute(
            "SELECT pid, state FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%%'"
        )
        return locks + cursor.fetchall()


def test_a_summary_held_five_seconds_holds_no_lock_and_intake_answers_409_at_once(
    thread, user, gated, settings
):
    model, started, gate = gated
    settings.THREAD_LOCK_TIMEOUT_MS = 15_000  # a lock wait would show as seconds below
    results: dict = {}
    compressing = _run(lambda: thread_compress(thread_id=thread.thread_id, user=user), results, "compress")
    assert started.wait(10)
    assert thread_compressing(thread_id=thread.thread_id)  # pages see it after a reload or in a second tab

    held_since, seen, intake_seconds = time.monotonic(), [], []
    while time.monotonic() - held_since < HELD_SECONDS:
        seen.extend(_holders_of_the_thread_table())
        began = time.monotonic()
        with pytest.raises(ThreadBusy):
            message_intake(thread_id=thread.thread_id, user=user, content="sent mid-compression")
        intake_seconds.append(time.monotonic() - began)
        time.sleep(0.5)
    assert seen == [], "no transaction may stay open on the thread while the summary is written"
    assert len(intake_seconds) >= 5 and max(intake_seconds) < 1.0, intake_seconds
    assert CompressionJob.objects.get().status == "running"

    gate.set()
    compressing.join(20)
    outcome = results["compress"]
    assert outcome.result["status"] == "completed", outcome
    assert (outcome.job.status, outcome.job.attempts) == ("succeeded", 1)
    assert outcome.job.record == outcome.record
    assert not Message.objects.filter(conversation=thread).exists()  # refused openly, never half-written
    assert repository_for(thread).get_values()["_summarization_event"]["cutoff_index"] > 0
    message_intake(thread_id=thread.thread_id, user=user, content="after it")  # idle again


def test_the_apply_refuses_a_checkpoint_that_changed_during_the_summary(thread, user, gated):
    model, started, gate = gated
    results: dict = {}
    compressing = _run(lambda: thread_compress(thread_id=thread.thread_id, user=user), results, "compress")
    assert started.wait(10)
    repository = repository_for(thread)
    repository.update({"messages": conversation_messages(1)[:1]})  # another writer, while nothing is locked
    changed = repository.get_values()

    gate.set()
    compressing.join(20)
    assert isinstance(results["compress"], ThreadChanged), results["compress"]
    job = CompressionJob.objects.get()
    assert (job.status, job.error_code) == ("failed", "thread_changed")
    assert job.record is None and not CompressionRecord.objects.exists()  # the refused swap rolled it back
    values = repository_for(thread).get_values()
    assert "_summarization_event" not in values or values["_summarization_event"] == changed.get(
        "_summarization_event"
    )
    assert values["messages"] == changed["messages"]
    assert not CompressionRecord.objects.filter(status="completed").exists()


def test_stop_during_the_summary_abandons_it_and_leaves_the_thread_unchanged(thread, user, gated, client):
    model, started, gate = gated
    before = repository_for(thread).get_values()
    results: dict = {}
    compressing = _run(lambda: thread_compress(thread_id=thread.thread_id, user=user), results, "compress")
    assert started.wait(10)
    job = CompressionJob.objects.get()
    client.force_login(user)

    stopped = client.post(f"/api/threads/{thread.thread_id}/compress/jobs/{job.pk}/cancel")

    assert stopped.status_code == 200, stopped.content
    assert stopped.json()["status"] == "cancelled"
    compressing.join(10)  # the summary call in flight is abandoned: the gate never opens
    assert not compressing.is_alive()
    assert results["compress"].code == "job_cancelled"
    gate.set()
    time.sleep(0.5)  # the abandoned call answers now; nobody may apply it
    job.refresh_from_db()
    assert job.status == "cancelled"
    assert repository_for(thread).get_values() == before
    assert not CompressionRecord.objects.filter(status="completed").exists()
    again = client.post(f"/api/threads/{thread.thread_id}/compress/jobs/{job.pk}/cancel")
    assert (again.status_code, again.json()["status"]) == (200, "cancelled")  # stopping twice is harmless
    message_intake(thread_id=thread.thread_id, user=user, content="after the stop")  # idle again


def test_a_retry_with_the_same_key_returns_the_same_job_without_a_second_summary(thread, user, gated):
    model, started, gate = gated
    results: dict = {}

    def compress():
        return thread_compress(thread_id=thread.thread_id, user=user, idempotency_key="retry-me")

    first = _run(compress, results, "first")
    assert started.wait(10)
    second = _run(compress, results, "second")
    time.sleep(0.5)
    assert second.is_alive()  # it waits for the job (not for a lock), never summarizes alongside
    gate.set()
    first.join(20)
    second.join(20)
    assert results["first"].result["status"] == "completed"
    assert results["second"].job.pk == results["first"].job.pk
    assert results["second"].result == results["first"].result
    replay = thread_compress(thread_id=thread.thread_id, user=user, idempotency_key="retry-me")
    assert replay.result == results["first"].result  # after completion: the stored result
    assert len(model.summary_prompts) == 1
    assert CompressionJob.objects.count() == 1 and CompressionRecord.objects.count() == 1


def test_one_idempotency_key_on_two_threads_compresses_only_one(thread, user, agent, gated):
    from conversations.services import thread_create

    model, started, gate = gated
    other = thread_create(user=user, agent_slug=agent.slug)
    seed_state(other, conversation_messages(5))
    other_before = repository_for(other).get_values()
    results: dict = {}
    first = _run(
        lambda: thread_compress(thread_id=thread.thread_id, user=user, idempotency_key="shared"),
        results,
        "first",
    )
    assert started.wait(10)
    with pytest.raises(IdempotencyConflict):
        thread_compress(thread_id=other.thread_id, user=user, idempotency_key="shared")
    gate.set()
    first.join(20)
    assert results["first"].result["status"] == "completed"
    assert len(model.summary_prompts) == 1
    assert repository_for(other).get_values() == other_before
    assert list(CompressionRecord.objects.values_list("conversation_id", flat=True)) == [thread.pk]
