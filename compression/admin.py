"""Read-only audit of compressions, and the compression actions on the thread admin."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from agent_platform.admin_base import AuditAdmin
from compression.bulk import bulk_compress_selected
from compression.models import CompressionJob, CompressionRecord
from compression.panels import loss_line_from, reason_text
from compression.record_page import record_page_context
from compression.tasks import bulk_compress_start
from conversations.access import VIEW_PERMISSION
from conversations.admin import ConversationAdmin, thread_label
from conversations.models import Conversation

# Who may run a summary on any user's thread from the admin (the thread pages leave it to the owner).
COMPRESS_ANY_THREAD_PERMISSION = "compression.compress_any_thread"


class ThreadRowsAdmin(AuditAdmin):
    """Audit rows of threads (records, jobs) show a thread's title, owner and identifiers: each user sees
    those of the threads they may see (``conversations.access``: their own, or every thread with
    ``view_conversation``); the model's own view permission alone opens no one else's."""

    def get_queryset(self, request: HttpRequest):
        rows = super().get_queryset(request)
        if request.user.has_perm(VIEW_PERMISSION):
            return rows
        return rows.filter(conversation__owner_id=request.user.pk)


@admin.register(CompressionRecord)
class CompressionRecordAdmin(ThreadRowsAdmin):
    list_display = (
        "created_at",
        "thread",
        "agent",
        "trigger",
        "outcome_words",
        "tokens",
        "identifiers",
    )
    list_filter = (
        "conversation__agent",
        "outcome",
        "trigger",
        ("created_at", admin.DateFieldListFilter),
        "level",
        "status",
    )
    list_select_related = ("conversation__agent", "conversation__owner")
    search_fields = (
        "conversation__thread_id",
        "conversation__title",
        "file_path",
        "idempotency_key",
        "error",
        "error_detail",
    )
    date_hierarchy = "created_at"
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "thread",
                    "agent",
                    "created_at",
                    "trigger",
                    "outcome_words",
                    "summary_kind",
                    "tokens",
                    "compressed_messages",
                    "requested_by",
                    "run",
                )
            },
        ),
        (
            _("Details"),
            {
                "classes": ("collapse",),
                "fields": (
                    "level",
                    "status",
                    "reason",
                    "reason_detail",
                    "cutoff_index",
                    "file_path",
                    "saved_files",
                    "summary_usage",
                    "spend_guard",
                    "error",
                    "idempotency_key",
                    "started_at",
                    "result",
                    "loss_report",
                ),
            },
        ),
    )

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        extra = (
            "thread",
            "agent",
            "outcome_words",
            "summary_kind",
            "tokens",
            "identifiers",
            "lost_identifiers",
        )
        return [*super().get_readonly_fields(request, obj), *extra]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        """The record page: its loss report, and links to the thread, the history file and the saved
        files for whoever may open the thread (the file view's own rule, ``conversations.access``)."""
        record = self.get_object(request, object_id)
        if record is not None:
            extra_context = {**(extra_context or {}), **record_page_context(record=record, user=request.user)}
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.display(description=_("Thread"), ordering="conversation__title")
    def thread(self, record: CompressionRecord) -> str:
        return thread_label(record.conversation)

    @admin.display(description=_("Agent"), ordering="conversation__agent__name")
    def agent(self, record: CompressionRecord) -> str:
        return record.conversation.agent.name

    @admin.display(description=_("Outcome"), ordering="outcome")
    def outcome_words(self, record: CompressionRecord) -> str:
        """The outcome as the thread page's card words it, with the reason when the budget was out of reach;
        a failure or an undo (no outcome) by its status and level."""
        if not record.outcome:
            words = f"{record.get_status_display()} ({record.get_level_display()})"
            return f"{words}: {record.error}" if record.error else words
        words = str(record.get_outcome_display())
        why = reason_text(record.reason_detail or None)
        return f"{words}: {why}" if why and record.outcome == record.Outcome.BUDGET_UNREACHABLE else words

    @admin.display(description=_("Summary"))
    def summary_kind(self, record: CompressionRecord) -> str:
        """A summary's kind: the model's, or extractive with why the model's was refused."""
        line = loss_line_from(record.loss_report)
        if line is None or not line.extractive:
            return str(_("the model's")) if record.cutoff_index is not None else "–"
        words = _("Extractive (the model's summary was refused: %(why)s)") % {"why": line.refusal or "–"}
        return f"{words}; invented: {', '.join(line.invented)}" if line.invented else words

    @admin.display(description=_("Tokens before → after (saved)"))
    def tokens(self, record: CompressionRecord) -> str:
        if record.before_tokens is None or record.after_tokens is None:
            return "–"
        return _("%(before)s → %(after)s (%(saved)s saved)") % {
            "before": f"{record.before_tokens:,}",
            "after": f"{record.after_tokens:,}",
            "saved": f"{record.tokens_saved:,}",
        }

    @admin.display(description=_("Identifiers (in view / one read / two reads / unreachable)"))
    def identifiers(self, record: CompressionRecord) -> str:
        """The loss report's tiers: of the identifiers in what was folded, how far a reader of the view
        is from each (older records read as ``LossReport.from_dict`` says)."""
        report = record.loss
        if not report.total:
            return "–"
        kept = report.in_summary + report.in_view
        text = f"{kept} / {report.one_read} / {report.two_reads} / {report.unreachable} of {report.total}"
        loss = record.loss_report or {}
        indexed = loss.get("indexed")
        if isinstance(indexed, int) and not isinstance(indexed, bool) and indexed > 0:
            text += f" ({indexed} in the reference index)"
        return text + (" (repaired)" if loss.get("repaired") else "")

    @admin.display(description=_("Lost identifiers"))
    def lost_identifiers(self, record: CompressionRecord) -> str:
        return ", ".join((record.loss_report or {}).get("lost_identifiers") or []) or "–"


@admin.register(CompressionJob)
class CompressionJobAdmin(ThreadRowsAdmin):
    """Compression jobs as they were claimed, run and ended: read-only, seen with ``view_compressionjob``."""

    list_display = ("thread", "asked_by", "status_words", "created_at", "duration")
    list_filter = ("status", "trigger", ("created_at", admin.DateFieldListFilter))
    list_select_related = ("conversation__owner", "requested_by")
    search_fields = ("conversation__thread_id", "conversation__title", "requested_by__username", "error")
    date_hierarchy = "created_at"

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [*super().get_readonly_fields(request, obj), "thread", "asked_by", "status_words", "duration"]

    @admin.display(description=_("Thread"), ordering="conversation__title")
    def thread(self, job: CompressionJob) -> str:
        return thread_label(job.conversation)

    @admin.display(description=_("Asked by"), ordering="requested_by__username")
    def asked_by(self, job: CompressionJob) -> str:
        return job.requested_by.get_username() if job.requested_by else "–"

    @admin.display(description=_("Status"), ordering="status")
    def status_words(self, job: CompressionJob) -> str:
        words = str(job.get_status_display())
        return f"{words}: {job.error}" if job.error else words

    @admin.display(description=_("Duration"))
    def duration(self, job: CompressionJob) -> str:
        """From the claim by a worker to the end (the queue wait left out); "–" until both are known."""
        if job.started_at is None or job.finished_at is None:
            return "–"
        return _("%(seconds)s s") % {"seconds": f"{(job.finished_at - job.started_at).total_seconds():,.1f}"}


class CompressingConversationAdmin(ConversationAdmin):
    """The thread admin with this app's actions (``conversations`` never imports ``compression``)."""

    actions = ["compress_context", "bulk_compress"]

    def has_compress_any_thread_permission(self, request: HttpRequest) -> bool:
        """Viewing threads is not enough: both actions spend a summary call on someone else's thread."""
        return request.user.has_perm(COMPRESS_ANY_THREAD_PERMISSION)

    @admin.action(description=_("Compress context"), permissions=["compress_any_thread"])
    def compress_context(self, request: HttpRequest, queryset) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        report, by_label = bulk_compress_selected(
            conversation_ids=ids, requested_by=request.user, trigger=CompressionRecord.Trigger.MANUAL
        )
        self.message_user(request, _report_message(report), messages.SUCCESS)
        names = {c.pk: str(c) for c in queryset}
        for label, level in (("skipped_busy", messages.WARNING), ("failed", messages.ERROR)):
            if by_label.get(label):
                listed = ", ".join(names[pk] for pk in by_label[label])
                title = _("Busy, not compressed") if label == "skipped_busy" else _("Failed")
                self.message_user(request, f"{title}: {listed}", level)

    @admin.action(
        description=_("Bulk compaction (background when a broker is configured)"),
        permissions=["compress_any_thread"],
    )
    def bulk_compress(self, request: HttpRequest, queryset) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        started = bulk_compress_start(conversation_ids=ids, requested_by=request.user)
        if started.report is not None:
            self.message_user(request, _report_message(started.report))
            return
        self.message_user(
            request,
            ngettext(
                "Queued %(count)d thread for compaction (batch %(batch)s).",
                "Queued %(count)d threads for compaction (batch %(batch)s).",
                started.queued,
            )
            % {"count": started.queued, "batch": started.batch},
        )


def _report_message(report) -> str:
    """A bulk report in the admin's language (the command prints its own English summary line)."""
    figures = report.as_dict()
    line = _(
        "Compressed %(compressed)d, no-op %(no_op)d, skipped busy %(skipped_busy)d, "
        "skipped (no capability) %(skipped_capability)d, failed %(failed)d; %(tokens_saved)s tokens saved; "
        "%(summary_calls)d summary call(s), %(summary_tokens)s summary tokens."
    ) % {
        **figures,
        "tokens_saved": f"{figures['tokens_saved']:,}",
        "summary_tokens": f"{figures['summary_tokens']:,}",
    }
    if report.interrupted:
        line += " " + _("Interrupted: stopped between threads, %(count)d not started.") % {
            "count": report.not_started
        }
    return line


admin.site.unregister(Conversation)
admin.site.register(Conversation, CompressingConversationAdmin)
