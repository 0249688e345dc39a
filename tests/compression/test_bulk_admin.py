"""Bulk compression from the admin actions and the Celery task (run eagerly): retries and idempotency."""

from __future__ import annotations

import openai
import pytest

from compression.bulk import bulk_compress_one
from compression.errors import ModelUnavailable
from compression.models import CompressionRecord
from conversations.models import AgentRun
from tests.compression._threads import bulk_records, connection_error, snapshot, without_ledger
from tests.context_engine.chats import SUMMARY

pytestmark = pytest.mark.django_db


# --- admin actions ----------------------------------------------------------------------------------


@pytest.fixture
def admin_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    client.force_login(admin)
    client.admin = admin
    return client


def _admin_action(client, action: str, threads) -> list[str]:
    response = client.post(
        "/admin/conversations/conversation/",
        {"action": action, "_selected_action": [t.pk for t in threads]},
        follow=True,
    )
    assert response.status_code == 200
    return [str(m) for m in response.context["messages"]]


def test_admin_compress_context_names_busy_threads(admin_client, make_thread, summarizer):
    summarizer()
    idle = make_thread("Quarterly report", pressure=0.99)
    busy = make_thread("Migration plan", pressure=0.95)
    AgentRun.objects.create(conversation=busy, status=AgentRun.Status.RUNNING)

    messages = _admin_action(admin_client, "compress_context", [idle, busy])

    assert any(m.startswith("Compressed 1, no-op 0, skipped busy 1") for m in messages), messages
    assert "Busy, not compressed: Migration plan" in messages
    record = CompressionRecord.objects.get(conversation=idle)
    assert (record.trigger, record.requested_by) == ("manual", admin_client.admin)
    assert not CompressionRecord.objects.filter(conversation=busy).exists()


def test_admin_bulk_compress_runs_synchronously_without_a_broker(
    admin_client, make_thread, summarizer, settings
):
    summarizer()
    settings.RUN_EXECUTION = "inprocess"
    settings.CELERY_BROKER_URL = "memory://"  # no broker: the action runs the threads now
    threads = [make_thread("one", pressure=0.99), make_thread("two", pressure=0.95)]

    messages = _admin_action(admin_client, "bulk_compress", threads)

    assert any(m.startswith("Compressed 2,") for m in messages), messages
    for thread in threads:
        record = bulk_records(thread).get()
        assert (record.status, record.requested_by) == ("completed", admin_client.admin)


# --- the Celery task, eagerly: retry and idempotency -------------------------------------------------


def test_transient_model_error_propagates_for_a_retry_and_leaves_state_unchanged(make_thread, summarizer):
    summarizer(connection_error(), SUMMARY)
    thread = make_thread("t")
    before = snapshot(thread)

    with pytest.raises(ModelUnavailable):
        bulk_compress_one(conversation_id=thread.pk, batch="b1", raise_transient=True)

    assert without_ledger(snapshot(thread)) == without_ledger(before)
    # The task's retry is its next attempt: a new job (a redelivery of the same attempt replays).
    retried = bulk_compress_one(conversation_id=thread.pk, batch="b1", raise_transient=True, attempt=1)
    assert retried.label == "completed"


def test_without_retry_a_transient_error_is_counted_as_failed(make_thread, summarizer):
    summarizer(connection_error())
    thread = make_thread("t")
    outcome = bulk_compress_one(conversation_id=thread.pk)
    assert outcome.label == "failed" and "Connection error" in outcome.error


def test_task_retries_a_transient_model_error_then_compresses(make_thread, summarizer, monkeypatch):
    from compression.tasks import thread_compress_task

    model = summarizer(connection_error(), SUMMARY)
    thread = make_thread("t")
    retries = []
    original_retry = thread_compress_task.retry

    def retry(*args, **kwargs):
        retries.append(kwargs.get("exc"))
        return original_retry(*args, **kwargs)

    monkeypatch.setattr(thread_compress_task, "retry", retry)

    result = thread_compress_task.apply(args=(thread.pk, "batch-1"))

    assert len(retries) == 1 and isinstance(retries[0], ModelUnavailable)
    assert "APIConnectionError" not in retries[0].message  # plain words; the exception is the detail
    assert "APIConnectionError" in retries[0].error_detail
    assert len(model.summary_prompts) == 2
    assert bulk_records(thread).filter(status="completed").count() == 1
    assert bulk_records(thread).filter(status="failed").count() == 1  # the failed attempt is audited
    assert result.state == "SUCCESS"
    assert result.result["label"] == "completed"


def test_task_redelivery_replays_instead_of_summarizing_again(make_thread, summarizer):
    from compression.tasks import thread_compress_task

    model = summarizer()
    thread = make_thread("t")

    first = thread_compress_task.apply(args=(thread.pk, "batch-2")).get()
    again = thread_compress_task.apply(args=(thread.pk, "batch-2")).get()

    assert first["label"] == again["label"] == "completed"
    assert first["tokens_saved"] == again["tokens_saved"] > 0
    assert len(model.summary_prompts) == 1
    assert bulk_records(thread).count() == 1


def test_task_options_make_it_redelivery_safe():
    from compression.tasks import thread_compress_task

    assert thread_compress_task.acks_late is True
    assert thread_compress_task.reject_on_worker_lost is True
    assert openai.APIConnectionError in thread_compress_task.autoretry_for
    assert thread_compress_task.retry_backoff
