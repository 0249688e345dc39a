"""One bulk-compression step per thread, and the tally a bulk run reports.

Every thread goes through ``compression.services.conversation_compress`` with ``nowait`` (a
``CompressionJob``, as manual compressions are): a thread that is busy or locked is skipped at once,
never waited on. The Celery fan-out is in ``tasks``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from django.conf import settings

from agent_platform.errors import ApplicationError
from compression.errors import ModelUnavailable
from compression.models import CompressionRecord
from compression.services import conversation_compress

logger = logging.getLogger(__name__)

# "APIConnectionError: Connection error." → "Connection error." (a dotted path counts as a class too).
_CLASS_PREFIX = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Timeout|Exceeded)\w*: ")
# Service error codes that mean "left alone on purpose", not "went wrong".
_SKIPPED = {"thread_busy": "skipped_busy", "capability_missing": "skipped_capability"}


@dataclass(frozen=True)
class BulkOutcome:
    conversation_id: int
    label: str  # completed | no_op | skipped_busy | skipped_capability | failed
    tokens_saved: int = 0
    summary_calls: int = 0
    summary_tokens: int = 0
    error: str = ""
    before_tokens: int | None = None
    after_tokens: int | None = None


def bulk_compress_one(
    *,
    conversation_id: int,
    batch: str | None = None,
    raise_transient: bool = False,
    attempt: int = 0,
    trigger: str = CompressionRecord.Trigger.BULK,
    requested_by=None,
) -> BulkOutcome:
    """Compress one thread for a bulk run and say what happened; never raises for one thread's trouble.

    With ``batch``, the compression is idempotent per (batch, thread, ``attempt``): a redelivered task
    replays the stored job instead of summarizing again, a retry (the next ``attempt``) is a new job.
    With ``raise_transient``, a transient model error propagates as ``ModelUnavailable`` (so a Celery
    task can retry it) instead of being counted as a failure.
    """
    key = None
    if batch:
        key = f"bulk:{batch}:{conversation_id}" + (f":{attempt}" if attempt else "")
    try:
        outcome = conversation_compress(
            conversation_id=conversation_id,
            trigger=trigger,
            requested_by=requested_by,
            nowait=True,
            idempotency_key=key,
        )
    except ApplicationError as exc:
        if raise_transient and isinstance(exc, ModelUnavailable):
            raise
        label = _SKIPPED.get(exc.code, "failed")
        return BulkOutcome(conversation_id, label, error=failure_words(exc) if label == "failed" else "")
    except Exception as exc:  # noqa: BLE001 - one broken thread must not stop the rest of the batch
        logger.exception("Bulk compression of conversation %s failed", conversation_id)
        return BulkOutcome(
            conversation_id, "failed", error=f"An unexpected error ({exc}); the server log has the details."
        )
    record = outcome.record
    usage = record.summary_usage or {}
    return BulkOutcome(
        conversation_id,
        outcome.result["status"],
        tokens_saved=record.tokens_saved,
        summary_calls=1 if record.level == CompressionRecord.Level.SUMMARY else 0,
        summary_tokens=int(usage.get("total_tokens") or 0),
        before_tokens=record.before_tokens,
        after_tokens=record.after_tokens,
    )


def failure_words(exc: ApplicationError) -> str:
    """A failed compression for the operator's report, in words: the service's message (written for
    people) and the provider's own text, without the exception's class (the record's and the job's
    ``error_detail`` keep the exception as raised, for the admin)."""
    detail = getattr(exc, "error_detail", "") or (str(exc.__cause__) if exc.__cause__ else "")
    text = _CLASS_PREFIX.sub("", detail.strip()).strip()
    words = str(exc.message)
    return words if not text or text in words else f"{words} ({text})"


@dataclass
class BulkReport:
    counts: dict[str, int] = field(default_factory=dict)
    tokens_saved: int = 0
    summary_calls: int = 0
    summary_tokens: int = 0
    errors: list[str] = field(default_factory=list)
    interrupted: bool = False
    not_started: int = 0  # threads left untouched because the run was interrupted

    def add(self, outcome: BulkOutcome) -> None:
        self.counts[outcome.label] = self.counts.get(outcome.label, 0) + 1
        self.tokens_saved += outcome.tokens_saved
        self.summary_calls += outcome.summary_calls
        self.summary_tokens += outcome.summary_tokens
        if outcome.error:
            self.errors.append(f"{outcome.conversation_id}: {outcome.error}")

    @property
    def failed(self) -> int:
        return self.counts.get("failed", 0)

    def as_dict(self) -> dict[str, object]:
        return {
            "compressed": self.counts.get("completed", 0),
            "no_op": self.counts.get("no_op", 0),
            "skipped_busy": self.counts.get("skipped_busy", 0),
            "skipped_capability": self.counts.get("skipped_capability", 0),
            "failed": self.failed,
            "tokens_saved": self.tokens_saved,
            "summary_calls": self.summary_calls,
            "summary_tokens": self.summary_tokens,
            "errors": self.errors,
            "interrupted": self.interrupted,
            "not_started": self.not_started,
        }

    def summary_line(self) -> str:
        d = self.as_dict()
        line = (
            f"Compressed {d['compressed']}, no-op {d['no_op']}, skipped busy {d['skipped_busy']}, "
            f"skipped (no capability) {d['skipped_capability']}, failed {d['failed']}; "
            f"{d['tokens_saved']:,} tokens saved; {d['summary_calls']} summary call(s), "
            f"{d['summary_tokens']:,} summary tokens."
        )
        if self.interrupted:
            line += f" Interrupted: stopped between threads, {self.not_started} not started."
        return line


def bulk_compress_selected(
    *, conversation_ids: list[int], requested_by=None, trigger: str = CompressionRecord.Trigger.BULK
) -> tuple[BulkReport, dict[str, list[int]]]:
    """Compress the given threads now, one by one; returns the tally and the ids per outcome label."""
    report, by_label = BulkReport(), {}
    for conversation_id in conversation_ids:
        outcome = bulk_compress_one(
            conversation_id=conversation_id, trigger=trigger, requested_by=requested_by
        )
        report.add(outcome)
        by_label.setdefault(outcome.label, []).append(conversation_id)
    return report, by_label


def celery_broker_configured() -> bool:
    """Whether tasks sent now reach a worker (an in-memory broker only reaches this process)."""
    return not str(settings.CELERY_BROKER_URL or "memory://").startswith("memory://")
