"""Django HTTP middleware: clear answers for what neither django-ninja nor the views answer well.

django-ninja returns a bare ``HttpResponseNotAllowed`` (text) for a wrong method on a known path and an
HTML 404 at its root (``/api/``); API clients get ``{"code", "message"}`` for every error, so these are
rewritten too. A body over
``DATA_UPLOAD_MAX_MEMORY_SIZE`` is a 413 ``{"code", "message"}`` on the API and a form error on the pages
(Django would answer a bare 400, or a 500 from inside an API operation).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

API_PREFIX = "/api/"
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")


class ApiErrorBodyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code not in (404, 405) or not request.path.startswith(API_PREFIX):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        if response.status_code == 404:
            return JsonResponse({"code": "not_found", "message": "Not found. See /api/docs."}, status=404)
        allowed = response.get("Allow", "")
        body = JsonResponse(
            {
                "code": "method_not_allowed",
                "message": f"{request.method} is not allowed here. Allowed: {allowed}.",
            },
            status=405,
        )
        if allowed:
            body["Allow"] = allowed
        return body


class RequestSizeLimitMiddleware:
    """Reads (up to the limit) the body of a write before any view or CSRF check does, so that an
    over-size body is answered here: 413 JSON on the API; on the pages a 413 text for ``fetch`` and a
    flashed form error with a redirect back for a plain form post."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in BODY_METHODS:
            try:
                # Multipart: fields are limited, files stream to upload handlers; else the raw body.
                _ = request.POST if request.content_type == "multipart/form-data" else request.body
            except RequestDataTooBig:
                return self._too_large(request)
        return self.get_response(request)

    def _too_large(self, request: HttpRequest) -> HttpResponse:
        limit_kib = settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024
        message = _("The request is too large: at most %(kib)s KiB.") % {"kib": limit_kib}
        if request.path.startswith(API_PREFIX):
            return JsonResponse({"code": "request_too_large", "message": message}, status=413)
        if request.headers.get("x-requested-with", "").lower() == "fetch":
            return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
        messages.error(request, message)
        back = request.headers.get("referer", "")
        safe = url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
        return redirect(back if safe else "conversations:thread-list")
