"""The audit records of compressions (``CompressionRecord``): reserved, filled, replayed, and written
for automatic compressions from their run events."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from agent_platform.observability.metrics import compression_observed
from compression.models import CompressionRecord, no_loss_report
from context_engine.manual.apply import REASON_SPEND_GUARD, ManualCompression
from conversations.models import AgentRun, Conversation
from conversations.services.usage import usage_record_summary


def record_from_manual(
    *,
    conversation: Conversation,
    trigger: str,
    requested_by: AbstractBaseUser | None,
    manual: ManualCompression,
    started_at: datetime,
    account: bool = True,
) -> CompressionRecord:
    """The audit record of a forced compression, written when its job applies it (``account=False``:
    the caller counts it with ``record_accounted`` once it is sure to commit)."""
    record = CompressionRecord(conversation=conversation, requested_by=requested_by, trigger=trigger)
    record_complete(record=record, manual=manual, started_at=started_at, account=account)
    return record


def record_complete(
    *, record: CompressionRecord, manual: ManualCompression, started_at: datetime, account: bool = True
) -> None:
    """Fill (and save) a record with what the forced compression did."""
    record.level = CompressionRecord.Level.SUMMARY if manual.update else CompressionRecord.Level.NONE
    record.status = manual.status
    record.reason = manual.reason or ""
    record.outcome = manual.outcome
    record.reason_detail = manual.reason_detail or {}
    record.before_tokens = manual.before_tokens
    record.after_tokens = manual.after_tokens
    record.cutoff_index = manual.cutoff_index
    record.compressed_messages = manual.compressed_messages
    record.file_path = manual.file_path or ""
    record.saved_files = list(manual.saved_files)
    record.summary_usage = manual.summary_usage or {}
    record.loss_report = manual.loss_report or no_loss_report()
    record.spend_guard = manual.spend_guard or {}
    record.result = manual.body()
    record.started_at = started_at
    record.save()
    if account:
        record_accounted(record)


def record_summary_failure(
    *,
    conversation_id: int,
    trigger: str,
    requested_by: AbstractBaseUser | None,
    error: str,
    error_detail: str = "",
    started_at: datetime,
    account: bool = True,
) -> CompressionRecord:
    """A failed forced summary, audited after its transaction rolled back (``error`` in the words the
    thread's users read, ``error_detail`` the exception for the admin)."""
    record = CompressionRecord.objects.create(
        conversation_id=conversation_id,
        requested_by=requested_by,
        trigger=trigger,
        level=CompressionRecord.Level.SUMMARY,
        status=CompressionRecord.Status.FAILED,
        error=error,
        error_detail=error_detail,
        started_at=started_at,
    )
    if account:
        record_accounted(record)
    return record


def record_undo(
    *,
    conversation: Conversation,
    requested_by: AbstractBaseUser,
    cutoff_index: int | None,
    result: Mapping[str, Any],
    started_at: datetime,
) -> CompressionRecord:
    record = CompressionRecord.objects.create(
        conversation=conversation,
        requested_by=requested_by,
        trigger=CompressionRecord.Trigger.UNDO,
        status=CompressionRecord.Status.COMPLETED,
        before_tokens=result["before_tokens"],
        after_tokens=result["after_tokens"],
        cutoff_index=cutoff_index,
        result=dict(result),
        started_at=started_at,
    )
    record_accounted(record)
    return record


def compression_record_from_event(*, run: AgentRun, event: Mapping[str, Any]) -> CompressionRecord | None:
    """The audit record of an automatic compression, from its ``completed``/``failed`` run event.

    Connected in ``CompressionConfig.ready()`` to ``conversations.signals.run_compression_event``, which
    the run executor sends for each compression event it relays."""
    status = event.get("status")
    if status not in (CompressionRecord.Status.COMPLETED, CompressionRecord.Status.FAILED):
        return None
    usage = event.get("summary_usage")
    record = CompressionRecord.objects.create(
        conversation_id=run.conversation_id,
        run=run,
        trigger=CompressionRecord.Trigger.AUTO,
        level=event.get("level") or CompressionRecord.Level.NONE,
        status=status,
        before_tokens=_count(event.get("before_tokens")),
        after_tokens=_count(event.get("after_tokens")),
        cutoff_index=_count(event.get("cutoff_index")),
        compressed_messages=_count(event.get("compressed_messages")),
        file_path=str(event.get("file_path") or ""),
        saved_files=list(event.get("saved_files") or []),
        summary_usage=dict(usage) if isinstance(usage, Mapping) else {},
        error=str(event.get("error") or ""),
        error_detail=str(event.get("error_detail") or ""),
        loss_report=dict(loss) if isinstance(loss := event.get("loss_report"), Mapping) else no_loss_report(),
        spend_guard=dict(guard) if isinstance(guard := event.get("spend_guard"), Mapping) else {},
        reason=REASON_SPEND_GUARD
        if event.get("spend_guard")
        else str(event.get("reason") or event.get("failure_kind") or "")[:100],
        outcome=str(event.get("outcome") or ""),
        reason_detail=dict(why) if isinstance(why := event.get("reason_detail"), Mapping) else {},
        result={key: value for key, value in event.items() if key != "error_detail"},
    )
    record_accounted(record)
    return record


def record_accounted(record: CompressionRecord) -> None:
    """Every compression record, once written, is counted here: its metrics and its summary calls'
    usage (the one place, whichever path wrote the record)."""
    compression_observed(
        trigger=record.trigger,
        level=record.level,
        outcome=record.outcome or record.status,
        tokens_saved=record.tokens_saved,
    )
    usage_record_summary(conversation=record.conversation, summary_usage=record.summary_usage)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None
