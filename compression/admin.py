"""Read-only audit of compressions, and the compression actions on the thread admin."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from agent_platform.admin_base import AuditAdmin
from compression.bulk import bulk_compress_selected
from compression.models import CompressionRecord
from compression.tasks import bulk_compress_start
from conversations.admin import ConversationAdmin
from conversations.models import Conversation


@admin.register(CompressionRecord)
class CompressionRecordAdmin(AuditAdmin):
    list_display = (
        "created_at",
        "conversation",
        "trigger",
        "level",
        "status",
        "before_tokens",
        "after_tokens",
        "identifiers",
        "reason",
        "file_path",
    )
    list_filter = ("trigger", "level", "status", "reason", "conversation__agent")
    search_fields = (
        "conversation__thread_id",
        "conversation__title",
        "file_path",
        "idempotency_key",
        "error",
    )
    date_hierarchy = "created_at"

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [*super().get_readonly_fields(request, obj), "lost_identifiers"]

    @admin.display(description=_("Identifiers (summary / saved file / lost)"))
    def identifiers(self, record: CompressionRecord) -> str:
        """The loss report's counts: of the identifiers in what was folded, where each one ended up."""
        report = record.loss_report or {}
        if not report.get("total"):
            return "–"
        kept = int(report.get("in_summary") or 0) + int(report.get("in_view") or 0)
        text = f"{kept} / {report.get('in_saved_file', 0)} / {report.get('lost', 0)} of {report['total']}"
        return text + (" (repaired)" if report.get("repaired") else "")

    @admin.display(description=_("Lost identifiers"))
    def lost_identifiers(self, record: CompressionRecord) -> str:
        return ", ".join((record.loss_report or {}).get("lost_identifiers") or []) or "–"


class CompressingConversationAdmin(ConversationAdmin):
    """The thread admin with this app's actions (``conversations`` never imports ``compression``)."""

    actions = ["compress_context", "bulk_compress"]

    @admin.action(description=_("Compress context"))
    def compress_context(self, request: HttpRequest, queryset) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        report, by_label = bulk_compress_selected(
            conversation_ids=ids, requested_by=request.user, trigger=CompressionRecord.Trigger.MANUAL
        )
        self.message_user(request, report.summary_line(), messages.SUCCESS)
        names = {c.pk: str(c) for c in queryset}
        for label, level in (("skipped_busy", messages.WARNING), ("failed", messages.ERROR)):
            if by_label.get(label):
                listed = ", ".join(names[pk] for pk in by_label[label])
                title = _("Busy, not compressed") if label == "skipped_busy" else _("Failed")
                self.message_user(request, f"{title}: {listed}", level)

    @admin.action(description=_("Bulk compaction (background when a broker is configured)"))
    def bulk_compress(self, request: HttpRequest, queryset) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        started = bulk_compress_start(conversation_ids=ids, requested_by=request.user)
        self.message_user(request, started.summary_line())


admin.site.unregister(Conversation)
admin.site.register(Conversation, CompressingConversationAdmin)
