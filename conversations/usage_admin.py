"""Usage in the admin: ``/admin/usage/`` (tokens, summary tokens and cost per user, agent or day) and
the read-only list of usage records. Both need ``conversations.view_usagerecord`` (superusers hold
it): usage shows what every user spent, so ``is_staff`` alone sees nothing (403).
Mounted under /admin/usage/ by ``config.urls``; the model admin is registered from ``admin.py``.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from agent_platform.errors import ApplicationError
from conversations.models import UsageRecord
from conversations.usage_selectors import GROUPS, usage_range, usage_report

PERMISSION = "conversations.view_usagerecord"


@staff_member_required
@require_GET
def usage_overview(request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm(PERMISSION):
        raise PermissionDenied
    group = request.GET.get("group", "day")
    error = ""
    if group not in GROUPS:
        group, error = "day", _("Group by day, agent or user.")
    try:
        since, until = usage_range(since=request.GET.get("since"), until=request.GET.get("until"))
    except ApplicationError as exc:
        error = exc.message
        since, until = usage_range(since=None, until=None)
    report = usage_report(since=since, until=until, group=group)
    context = {
        **admin.site.each_context(request),
        "title": _("Usage"),
        "report": report,
        "group": group,
        "groups": [("day", _("Day")), ("agent", _("Agent")), ("user", _("User"))],
        "error": error,
    }
    return render(request, "admin/conversations/usage.html", context, status=400 if error else 200)


urlpatterns = [path("", usage_overview, name="admin-usage")]


class UsageRecordAdmin(admin.ModelAdmin):
    list_display = (
        "created_at",
        "kind",
        "owner",
        "agent",
        "model_name",
        "input_tokens",
        "cache_read_tokens",
        "output_tokens",
        "cost",
    )
    list_filter = ("kind", "agent", "created_at")
    search_fields = ("owner__username", "model_name")
    date_hierarchy = "created_at"
    list_select_related = ("owner", "agent")

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


admin.site.register(UsageRecord, UsageRecordAdmin)
