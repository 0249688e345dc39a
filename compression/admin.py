"""Read-only audit of compressions."""

from __future__ import annotations

from django.contrib import admin

from agent_platform.admin_base import AuditAdmin
from compression.models import CompressionRecord


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
        "file_path",
    )
    list_filter = ("trigger", "level", "status", "conversation__agent")
    search_fields = (
        "conversation__thread_id",
        "conversation__title",
        "file_path",
        "idempotency_key",
        "error",
    )
    date_hierarchy = "created_at"
