"""Admin building blocks shared by the apps."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest


class AuditAdmin(admin.ModelAdmin):
    """A read-only admin for audit rows (runs, compression records): list, filter, look; never edit."""

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
