"""Celery tasks for compression: one bulk compaction per thread."""

from __future__ import annotations

from celery import shared_task

from compression.bulk import TRANSIENT_MODEL_ERRORS, bulk_compact_one


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_MODEL_ERRORS,
    retry_backoff=True,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=5,
)
def thread_compact(self, conversation_id: int, batch: str | None = None) -> dict:
    """Compact one thread. Idempotent: a redelivery with the same batch replays the stored result;
    a thread busy or locked by someone else is reported and left alone (never waited on, never retried).
    """
    outcome = bulk_compact_one(conversation_id=conversation_id, batch=batch, raise_transient=True)
    return {
        "conversation_id": conversation_id,
        "label": outcome.label,
        "tokens_saved": outcome.tokens_saved,
        "error": outcome.error,
    }
