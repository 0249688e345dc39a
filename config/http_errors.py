"""Django HTTP middleware: clear answers for what neither django-ninja nor the views answer well.

django-ninja returns a bare ``HttpResponseNotAllowed`` (text) for a wrong method on a known path and an
HTML 404 at its root (``/api/``); API clients get ``{"code", "message"}`` for every error, so these are
rewritten too. A body over
``DATA_UPLOAD_MAX_MEMORY_SIZE`` is a 413 ``{"code", "message"}`` on the API and a form error on the pages
(Django would answer a bare 400, or a 500 from inside an API operation); so is a file over
``ATTACHMENT_MAX_FILE_BYTES``, stopped as soon as it passes the limit, and a multipart body that cannot
be parsed is a 400 ``invalid_multipart``. What is refused before the body is read at all is
``config.body_gate``'s part.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import redirect
from django.template.defaultfilters import filesizeformat
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

API_PREFIX = "/api/"
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")
MULTIPART = "multipart/form-data"
ADMIN_PREFIX = "/admin/"


class AttachmentTooLargeUpload(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class AttachmentLimitHandler(FileUploadHandler):
    """First of the upload handlers: stops the parse as soon as one file passes the attachment limit,
    so no more of it is written to a temporary file."""

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        if start + len(raw_data) > settings.ATTACHMENT_MAX_FILE_BYTES:
            raise AttachmentTooLargeUpload(self.file_name or "file")
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler makes the file


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
        if request.method not in BODY_METHODS:
            return self.get_response(request)
        multipart = request.content_type == MULTIPART
        if multipart and not request.path.startswith(
            ADMIN_PREFIX
        ):  # the admin's documents are not attachments
            request.upload_handlers.insert(0, AttachmentLimitHandler(request))
        try:
            # Multipart: fields are limited, files stream to upload handlers; else the raw body.
            request.POST if multipart else request.body  # noqa: B018 - read for its checks
        except RequestDataTooBig:
            limit_kib = settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024
            message = _("The request is too large: at most %(kib)s KiB.") % {"kib": limit_kib}
            return self._refuse(request, 413, "request_too_large", message)
        except AttachmentTooLargeUpload as exc:
            message = _("%(name)s is larger than %(limit)s.") % {
                "name": exc.name,
                "limit": filesizeformat(settings.ATTACHMENT_MAX_FILE_BYTES),
            }
            return self._refuse(request, 413, "attachment_too_large", message)
        except (MultiPartParserError, TooManyFilesSent, TooManyFieldsSent):
            message = _(
                "The form data could not be read: send it as multipart/form-data with a valid boundary."
            )
            return self._refuse(request, 400, "invalid_multipart", message)
        return self.get_response(request)

    def _refuse(self, request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
        if request.path.startswith(API_PREFIX):
            return JsonResponse({"code": code, "message": message}, status=status)
        if request.headers.get("x-requested-with", "").lower() == "fetch":
            return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
        messages.error(request, message)
        back = request.headers.get("referer", "")
        safe = url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
        return redirect(back if safe else "conversations:thread-list")
