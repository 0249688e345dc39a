"""Admin building blocks shared by the apps: the read-only audit admin, and the guard of the admin's JSON views."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _

from agent_platform.errors import ApplicationError


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


def admin_json(
    *, permissions: tuple[str, ...]
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A GET-only JSON view for the admin's own pages: 401 without a login, 403 for a user who is not
    active staff holding one of ``permissions``; an ``ApplicationError`` becomes its ``{"code",
    "message"}`` body. The admin's pages call these from ``static/js``, so every answer is JSON."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            user = request.user
            if request.method != "GET":
                error: ApplicationError = ApplicationError(
                    _("Only GET is allowed here."), code="method_not_allowed", status=405
                )
            elif not user.is_authenticated:
                error = ApplicationError(_("Log in to the admin first."), code="unauthorized", status=401)
            elif not (user.is_active and user.is_staff and any(user.has_perm(p) for p in permissions)):
                error = ApplicationError(_("Your account may not do this."), code="forbidden", status=403)
            else:
                try:
                    return view(request, *args, **kwargs)
                except ApplicationError as exc:
                    error = exc
            return JsonResponse(error.as_body(), status=error.status)

        return wrapper

    return decorate
