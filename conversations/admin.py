"""Admin views of threads, their read-only transcripts, and runs."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from agent_platform.admin_base import AuditAdmin
from conversations.models import AgentRun, Conversation, Message


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class MessageInline(ReadOnlyInline):
    model = Message
    fields = ("seq", "role", "tool_name", "content", "tool_calls", "created_at")
    readonly_fields = fields
    ordering = ("seq",)


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("__str__", "owner", "agent", "status", "pressure_ratio", "last_activity_at")
    list_filter = ("status", "agent", "summary_active")
    search_fields = ("title", "thread_id", "owner__username")
    readonly_fields = (
        "thread_id",
        "owner",
        "agent",
        "created_at",
        "updated_at",
        "last_activity_at",
        "context_tokens",
        "trigger_tokens",
        "pressure_ratio",
        "summary_active",
        "usage_updated_at",
    )
    fields = ("title", "status", *readonly_fields)
    inlines = [MessageInline]
    actions = ["compress_context", "bulk_compact"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description=_("Compress context"))
    def compress_context(self, request: HttpRequest, queryset) -> None:
        from compression.bulk import bulk_compact_selected
        from compression.models import CompressionRecord

        ids = list(queryset.values_list("pk", flat=True))
        report, by_label = bulk_compact_selected(
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
    def bulk_compact(self, request: HttpRequest, queryset) -> None:
        from compression.bulk import bulk_compact_enqueue, bulk_compact_selected, celery_broker_configured

        ids = list(queryset.values_list("pk", flat=True))
        if celery_broker_configured():
            batch = bulk_compact_enqueue(conversation_ids=ids)
            self.message_user(request, f"Queued {len(ids)} thread(s) for compaction (batch {batch}).")
            return
        report, _by_label = bulk_compact_selected(conversation_ids=ids, requested_by=request.user)
        self.message_user(request, report.summary_line())


@admin.register(AgentRun)
class AgentRunAdmin(AuditAdmin):
    list_display = ("id", "conversation", "kind", "status", "created_at", "started_at", "finished_at")
    list_filter = ("status", "kind")
    search_fields = ("conversation__thread_id", "conversation__title", "error")
