"""Celery tasks for compression: one bulk compression per thread, and the fan-out that sends them."""

from __future__ import annotations

import uuid
from functools import partial

from celery import shared_task
from django.db import transaction

from compression.bulk import bulk_compress_one
from compression.errors import TRANSIENT_MODEL_ERRORS


# The task keeps its registered name (``compression.tasks.thread_compact``) so messages already queued
# under it are still delivered after an upgrade.
@shared_task(
    name="compression.tasks.thread_compact",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_MODEL_ERRORS,
    retry_backoff=True,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=5,
)
def thread_compress_task(self, conversation_id: int, batch: str | None = None) -> dict:
    """Compress one thread. Idempotent: a redelivery with the same batch replays the stored result;
    a thread busy or locked by someone else is reported and left alone (never waited on, never retried).
    """
    outcome = bulk_compress_one(conversation_id=conversation_id, batch=batch, raise_transient=True)
    return {
        "conversation_id": conversation_id,
        "label": outcome.label,
        "tokens_saved": outcome.tokens_saved,
        "error": outcome.error,
    }


def bulk_compress_enqueue(*, conversation_ids: list[int], queue: str | None = None) -> str:
    """One Celery task per thread (sent after commit); returns the batch id that makes them idempotent."""
    batch = uuid.uuid4().hex[:12]
    options = {"queue": queue} if queue else {}
    for conversation_id in conversation_ids:
        transaction.on_commit(
            partial(thread_compress_task.apply_async, args=(conversation_id, batch), **options)
        )
    return batch
