"""ASGI: a request body is judged by its headers before Django's handler reads it.

Django's ASGI handler reads the whole body into a temporary file (on disk past
``FILE_UPLOAD_MAX_MEMORY_SIZE``) before any middleware runs, so a check in Django middleware comes
too late: a 50 MB anonymous upload would be on disk before its 401. Here, from the headers alone:

- a multipart body from someone who is not signed in (no valid session cookie, no valid bearer token)
  is refused unread: 401 on the API, the login page elsewhere (a small one, the size of a form
  field, still reaches the pages: the login and language forms are anonymous);
- any other body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is refused unread (413), as before authentication;
- outside the admin, a multipart body larger than the attachment limits allow (``ATTACHMENT_MAX_FILES``
  files of ``ATTACHMENT_MAX_FILE_BYTES`` plus the form fields) is refused unread (413); the
  per-file limit itself is applied while the body is parsed (``http_errors.AttachmentLimitHandler``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from importlib import import_module
from typing import Any
from urllib.parse import quote

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import get_user
from django.http import HttpRequest
from django.http.cookie import parse_cookie
from django.shortcuts import resolve_url
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

from agent_platform.models import ApiToken
from config.http_errors import ADMIN_PREFIX, API_PREFIX, BODY_METHODS, MULTIPART

# Room for the part headers and boundaries of a multipart body around its files and fields.
MULTIPART_OVERHEAD_BYTES = 64 * 1024

Scope = dict[str, Any]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def upload_cap_bytes() -> int:
    """The largest multipart body an attachment upload can need."""
    fields = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0
    files = settings.ATTACHMENT_MAX_FILES * settings.ATTACHMENT_MAX_FILE_BYTES
    return files + fields + MULTIPART_OVERHEAD_BYTES


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}


def _content_length(headers: dict[str, str]) -> int | None:
    try:
        return int(headers["content-length"])
    except (KeyError, ValueError):
        return None


def signed_in(headers: dict[str, str], *, api: bool) -> bool:
    """Whether the request carries a valid session cookie (or, on the API, a valid bearer token)."""
    scheme, _space, token = headers.get("authorization", "").partition(" ")
    if api and scheme.lower() == "bearer" and token.strip():
        if ApiToken.objects.authenticate(token.strip()) is not None:
            return True
    session_key = parse_cookie(headers.get("cookie", "")).get(settings.SESSION_COOKIE_NAME)
    if not session_key:
        return False
    request = HttpRequest()
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    return get_user(request).is_authenticated


class BodyGate:
    """Wraps Django's ASGI application; sockets and bodiless requests pass straight through."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[dict]], send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            return await self.app(scope, receive, send)
        refusal = await self._refusal(scope)
        if refusal is None:
            return await self.app(scope, receive, send)
        status, headers, body = refusal
        headers = [*headers, (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return None

    async def _refusal(self, scope: Scope) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        path: str = scope["path"]
        api = path.startswith(API_PREFIX)
        headers = _headers(scope)
        length = _content_length(headers)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if headers.get("content-type", "").split(";")[0].strip().lower() != MULTIPART:
            if limit is not None and length is not None and length > limit:
                message = _("The request is too large: at most %(kib)s KiB.") % {"kib": limit // 1024}
                return _answer(api, 413, "request_too_large", message)
            return None
        small = length is not None and (limit is None or length <= limit)
        if (api or not small) and not await database_sync_to_async(signed_in)(headers, api=api):
            if api:
                message = "Authentication required: a session or a valid bearer token."
                return _answer(api, 401, "unauthorized", message)
            login = resolve_url("admin:login" if path.startswith(ADMIN_PREFIX) else settings.LOGIN_URL)
            return 302, [(b"location", f"{login}?next={quote(path)}".encode())], b""
        if not path.startswith(ADMIN_PREFIX) and length is not None and length > upload_cap_bytes():
            message = _("At most %(count)d files of %(limit)s each can be attached to one message.") % {
                "count": settings.ATTACHMENT_MAX_FILES,
                "limit": filesizeformat(settings.ATTACHMENT_MAX_FILE_BYTES),
            }
            return _answer(api, 413, "attachment_too_large", message)
        return None


def _answer(api: bool, status: int, code: str, message: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The API's ``{"code", "message"}``; the pages' composer shows a plain text as it is."""
    if api:
        body = json.dumps({"code": code, "message": message}).encode()
        return status, [(b"content-type", b"application/json")], body
    return status, [(b"content-type", b"text/plain; charset=utf-8")], message.encode()
