"""django-axes' login-attempt admin, with the permission its one action needs declared (every admin
action declares one: ``tests/compression/test_authorization_matrix_admin_actions.py``). Cleaning up
expired attempts deletes rows: it takes ``axes.delete_accessattempt``."""

from __future__ import annotations

from axes.admin import AccessAttemptAdmin as AxesAccessAttemptAdmin
from axes.models import AccessAttempt
from django.contrib import admin
from django.utils import timezone


class AccessAttemptAdmin(AxesAccessAttemptAdmin):
    @admin.action(
        description=AxesAccessAttemptAdmin.cleanup_expired_attempts.short_description, permissions=["delete"]
    )
    def cleanup_expired_attempts(self, request, queryset):
        # Axes reads the time from its middleware, which sets it on login requests only.
        if not hasattr(request, "axes_attempt_time"):
            request.axes_attempt_time = timezone.now()
        return super().cleanup_expired_attempts(request, queryset)


# ``axes.admin`` registered its own on import (axes comes before this app in INSTALLED_APPS).
if admin.site.is_registered(AccessAttempt):
    admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, AccessAttemptAdmin)
