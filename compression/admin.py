"""Read-only audit of compressions."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from compression.models import CompressionRecord


@admin.register(CompressionRecord)
class CompressionRecordAdmin(admin.ModelAdmin):
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

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [f.name for f in CompressionRecord._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
