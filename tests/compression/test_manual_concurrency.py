"""Manual compression against message intake, on real PostgreSQL with real threads and connections."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from compression.services import thread_compress
from conversations.errors import ThreadBusy
from conversations.models import Message
from conversations.selectors import thread_compressing
from conversations.services import message_intake
from tests.compression._threads import repository_for, seed_state
from tests.context_engine.chats import conversation_messages
from tests.context_engine.fakes import ScriptedChatModel
from tests.support.locks import wait_for_lock_waiters

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def gated(monkeypatch):
    model = ScriptedChatModel(summaries=["## SESSION INTENT\ncompressed while the lock was held"])
    started, gate = threading.Event(), threading.Event()
    original = model._generate

    def generate(messages, stop=None, run_manager=None, **kwargs):
        started.set()
        assert gate.wait(20), "the test never opened the gate"
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


def test_intake_waits_for_a_compression_and_loses_nothing(thread, user, gated, settings):
    model, started, gate = gated
    settings.THREAD_LOCK_TIMEOUT_MS = 15_000
    settings.RUN_EXECUTION = "celery"  # keep the queued run queued: this test is about the lock only
    results: dict = {}
    compressing = _run(lambda: thread_compress(thread_id=thread.thread_id, user=user), results, "compress")
    assert started.wait(10)
    assert thread_compressing(thread_id=thread.thread_id)  # pages see it after a reload or in a second tab

    intake = _run(
        lambda: message_intake(thread_id=thread.thread_id, user=user, content="sent mid-compression"),
        results,
        "intake",
    )
    assert wait_for_lock_waiters(), "intake must wait for the row lock while the compression holds it"
    assert intake.is_alive()
    assert not Message.objects.filter(conversation=thread).exists()

    gate.set()
    compressing.join(20)
    intake.join(20)
    assert results["compress"].result["status"] == "completed"
    assert not isinstance(results["intake"], BaseException), results["intake"]
    message = Message.objects.get(conversation=thread)
    assert message.content == "sent mid-compression"
    record = results["compress"].record
    assert record.created_at < message.created_at  # serialized: the compression committed first
    values = repository_for(thread).get_values()
    assert values["_summarization_event"]["cutoff_index"] > 0


def test_intake_answers_busy_after_its_bounded_wait(thread, user, gated, settings):
    model, started, gate = gated
    settings.THREAD_LOCK_TIMEOUT_MS = 300
    results: dict = {}
    compressing = _run(lambda: thread_compress(thread_id=thread.thread_id, user=user), results, "compress")
    assert started.wait(10)
    began = time.monotonic()
    with pytest.raises(ThreadBusy):
        message_intake(thread_id=thread.thread_id, user=user, content="too early")
    assert time.monotonic() - began < 5
    gate.set()
    compressing.join(20)
    assert results["compress"].result["status"] == "completed"
    assert not Message.objects.filter(conversation=thread).exists()  # refused openly, never half-written


def test_a_compression_waits_for_an_intake_then_sees_the_thread_busy(thread, user, settings):
    """Another holder has the thread's lock and an intake follows it: the compression waits for the
    lock, then either compresses before the intake's message or answers 409 after its queued run;
    the two are serialized, never interleaved (either order is accepted below)."""
    from conversations.services import thread_lock

    settings.RUN_EXECUTION = "celery"
    results: dict = {}
    locked, release = threading.Event(), threading.Event()

    def hold_and_queue():
        with thread_lock(thread_id=thread.thread_id, user=user):
            locked.set()
            release.wait(10)
        return message_intake(thread_id=thread.thread_id, user=user, content="queued first")

    holder = _run(hold_and_queue, results, "intake")
    assert locked.wait(10)
    compressing = _run(lambda: thread_compress(thread_id=thread.thread_id, user=user), results, "compress")
    assert wait_for_lock_waiters(), "the compression must wait for the row lock the holder has"
    assert compressing.is_alive()
    release.set()
    holder.join(20)
    compressing.join(20)
    # Either order is serialized: the compression ran before the message or refused after it.
    outcome = results["compress"]
    if isinstance(outcome, BaseException):
        assert isinstance(outcome, ThreadBusy)
    else:
        assert outcome.result["status"] == "completed"
    assert Message.objects.filter(conversation=thread, content="queued first").count() == 1


def test_concurrent_requests_with_one_idempotency_key_summarize_once(thread, user, gated, settings):
    """A client retrying while its first request is still summarizing: the retry waits for the lock,
    then replays the stored result; exactly one summary call, one audit record."""
    from compression.models import CompressionRecord

    model, started, gate = gated
    settings.THREAD_LOCK_TIMEOUT_MS = 15_000
    results: dict = {}

    def compress():
        return thread_compress(thread_id=thread.thread_id, user=user, idempotency_key="retry-me")

    first = _run(compress, results, "first")
    assert started.wait(10)
    second = _run(compress, results, "second")
    assert wait_for_lock_waiters(), "the retry must wait for the row lock, not summarize alongside"
    assert second.is_alive()
    gate.set()
    first.join(20)
    second.join(20)
    assert not isinstance(results["second"], BaseException), results["second"]
    assert results["first"].result["status"] == "completed"
    assert results["second"].result == results["first"].result
    assert len(model.summary_prompts) == 1
    assert CompressionRecord.objects.filter(idempotency_key=f"user:{user.pk}:retry-me").count() == 1
    assert CompressionRecord.objects.count() == 1


def test_one_idempotency_key_on_two_threads_at_once_compresses_only_one(thread, user, agent, gated):
    """The key is claimed before any work: the second thread's request waits on the key's unique
    index, then answers 409 ``idempotency_conflict`` without summarizing or touching its state."""
    from compression.errors import IdempotencyConflict
    from compression.models import CompressionRecord
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
    second = _run(
        lambda: thread_compress(thread_id=other.thread_id, user=user, idempotency_key="shared"),
        results,
        "second",
    )
    assert wait_for_lock_waiters(), "the second claim must wait for the first to commit or roll back"
    assert second.is_alive()
    gate.set()
    first.join(20)
    second.join(20)
    assert results["first"].result["status"] == "completed"
    assert isinstance(results["second"], IdempotencyConflict), results["second"]
    assert len(model.summary_prompts) == 1
    assert repository_for(other).get_values() == other_before
    assert list(CompressionRecord.objects.values_list("conversation_id", flat=True)) == [thread.pk]
