"""Audit records: one row per compression, automatic, manual or bulk."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from context_engine import outcomes
from context_engine.events import LEVEL_UNDO
from context_engine.summary.identifiers import NO_LOSS, LossReport


def no_loss_report() -> dict:
    return dict(NO_LOSS)


class CompressionRecord(models.Model):
    class Trigger(models.TextChoices):
        AUTO = "auto", _("Automatic (in a run)")
        MANUAL = "manual", _("Manual")
        BULK = "bulk", _("Bulk")
        UNDO = LEVEL_UNDO, _("Undo")  # shown as the "undo" level, as its event is

    class Level(models.TextChoices):
        NONE = "none", _("None")
        COMPACTION = "compaction", _("Compaction")
        SUMMARY = "summary", _("Summary")

    class Status(models.TextChoices):
        COMPLETED = "completed", _("Completed")
        NO_OP = "no_op", _("No-op")
        FAILED = "failed", _("Failed")

    class Outcome(models.TextChoices):  # context_engine.outcomes: one vocabulary everywhere
        COMPACTED = outcomes.COMPACTED, _("Compacted")
        SUMMARIZED = outcomes.SUMMARIZED, _("Summarized")
        NO_CHANGE = outcomes.NO_CHANGE, _("No change needed")
        BUDGET_UNREACHABLE = outcomes.BUDGET_UNREACHABLE, _("Could not reach the budget")

    conversation = models.ForeignKey(
        "conversations.Conversation",
        verbose_name=_("conversation"),
        on_delete=models.CASCADE,
        related_name="compression_records",
    )
    run = models.ForeignKey(
        "conversations.AgentRun",
        verbose_name=_("run"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("requested by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    trigger = models.CharField(
        verbose_name=_("trigger"), max_length=10, choices=Trigger.choices, db_index=True
    )
    level = models.CharField(
        verbose_name=_("level"), max_length=12, choices=Level.choices, default=Level.NONE
    )
    status = models.CharField(verbose_name=_("status"), max_length=12, choices=Status.choices, db_index=True)
    reason = models.CharField(verbose_name=_("reason"), max_length=100, blank=True)
    # How it ended (blank for failures and undos) and why, as {"code", "tokens", "trigger", "messages"}.
    outcome = models.CharField(
        verbose_name=_("outcome"), max_length=24, choices=Outcome.choices, blank=True, db_index=True
    )
    reason_detail = models.JSONField(verbose_name=_("reason detail"), default=dict, blank=True)
    before_tokens = models.PositiveIntegerField(verbose_name=_("before tokens"), null=True, blank=True)
    after_tokens = models.PositiveIntegerField(verbose_name=_("after tokens"), null=True, blank=True)
    cutoff_index = models.PositiveIntegerField(verbose_name=_("cutoff index"), null=True, blank=True)
    compressed_messages = models.PositiveIntegerField(
        verbose_name=_("compressed messages"), null=True, blank=True
    )
    file_path = models.CharField(verbose_name=_("file path"), max_length=500, blank=True)
    saved_files = models.JSONField(verbose_name=_("saved files"), default=list, blank=True)
    summary_usage = models.JSONField(verbose_name=_("summary usage"), default=dict, blank=True)
    # What the thread's pages show; the exception as raised is ``error_detail``, for the admin.
    error = models.TextField(verbose_name=_("error"), blank=True)
    error_detail = models.TextField(verbose_name=_("error detail"), blank=True)
    # Where the identifiers of the folded messages went, by reach tier (context_engine.summary.identifiers
    # .LossReport.as_dict; older records carry in_saved_file/lost, read through ``loss``). Records that
    # folded nothing carry the empty report (nothing lost).
    loss_report = models.JSONField(verbose_name=_("loss report"), default=no_loss_report, blank=True)
    # The spend guard's decision when it held a summary back (context_engine.summary.spend_guard.GuardDecision).
    spend_guard = models.JSONField(verbose_name=_("spend guard"), default=dict, blank=True)
    # NULL (not "") so uniqueness binds only requests that carried an Idempotency-Key.
    idempotency_key = models.CharField(
        verbose_name=_("idempotency key"), max_length=300, null=True, blank=True, unique=True
    )  # noqa: DJ001
    result = models.JSONField(
        verbose_name=_("result"), default=dict, blank=True
    )  # the response body, replayed on an idempotent retry
    started_at = models.DateTimeField(verbose_name=_("started at"), null=True, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("compression record")
        verbose_name_plural = _("compression records")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["conversation", "-created_at"])]
        # The admin's compression actions run a paid summary on anyone's thread: operators only.
        permissions = [("compress_any_thread", "Can compress any thread from the admin")]

    def __str__(self) -> str:
        return f"{self.trigger} {self.level} {self.status} on {self.conversation_id}"

    @property
    def loss(self) -> LossReport:
        """The loss report's tiers, whichever shape the record was written in."""
        return LossReport.from_dict(self.loss_report)

    @property
    def tokens_saved(self) -> int:
        if self.before_tokens is None or self.after_tokens is None:
            return 0
        return max(self.before_tokens - self.after_tokens, 0)


class CompressionJob(models.Model):
    """One manual or bulk compression as a durable job: claimed under the thread's row lock, folded and
    summarized with no transaction open, applied under the lock only if the checkpoint is unchanged."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        CANCELLED = "cancelled", _("Cancelled")
        NO_CHANGE = "no_change", _("No change")

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)

    conversation = models.ForeignKey(
        "conversations.Conversation",
        verbose_name=_("conversation"),
        on_delete=models.CASCADE,
        related_name="compression_jobs",
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("requested by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    trigger = models.CharField(
        verbose_name=_("trigger"), max_length=10, choices=CompressionRecord.Trigger.choices
    )
    status = models.CharField(
        verbose_name=_("status"), max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    preview_id = models.CharField(verbose_name=_("preview ID"), max_length=64, blank=True)
    # NULL (not "") so uniqueness binds only requests that carried an Idempotency-Key.
    idempotency_key = models.CharField(  # noqa: DJ001
        verbose_name=_("idempotency key"), max_length=300, null=True, blank=True, unique=True
    )
    # The checkpoint the fold was computed from; the apply refuses any other (compare-and-swap).
    checkpoint_version = models.CharField(verbose_name=_("checkpoint version"), max_length=64, blank=True)
    worker = models.CharField(verbose_name=_("worker"), max_length=200, blank=True)
    attempts = models.PositiveSmallIntegerField(verbose_name=_("attempts"), default=0)
    heartbeat_at = models.DateTimeField(verbose_name=_("heartbeat at"), null=True, blank=True)
    cancel_requested_at = models.DateTimeField(verbose_name=_("cancel requested at"), null=True, blank=True)
    record = models.ForeignKey(
        CompressionRecord,
        verbose_name=_("record"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    result = models.JSONField(verbose_name=_("result"), default=dict, blank=True)  # the compression's body
    error_code = models.CharField(verbose_name=_("error code"), max_length=50, blank=True)
    # In the words the thread's users read; the exception as raised is ``error_detail``, for the admin.
    error = models.TextField(verbose_name=_("error"), blank=True)
    error_detail = models.TextField(verbose_name=_("error detail"), blank=True)
    # The failure was a transient model error (the bulk task retries those, as a new job).
    retryable = models.BooleanField(verbose_name=_("retryable"), default=False)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(verbose_name=_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(verbose_name=_("finished at"), null=True, blank=True)

    class Meta:
        verbose_name = _("compression job")
        verbose_name_plural = _("compression jobs")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["conversation", "status"])]

    def __str__(self) -> str:
        return f"compression job {self.pk} ({self.status}) on {self.conversation_id}"

    @property
    def finished(self) -> bool:
        return self.status not in self.ACTIVE_STATUSES
