"""Admin views of threads, their read-only transcripts, and runs. The compression actions on threads
are added by ``compression.admin``."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

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

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(AgentRun)
class AgentRunAdmin(AuditAdmin):
    list_display = ("id", "conversation", "kind", "status", "created_at", "started_at", "finished_at")
    list_filter = ("status", "kind")
    search_fields = ("conversation__thread_id", "conversation__title", "error", "error_detail")


from conversations import usage_admin  # noqa: E402,F401 - registers the usage records list
