"""Login throttling (django-axes): how a locked-out login is answered, and whose address it was.

Failed logins are counted per account and per client address (``AXES_LOCKOUT_PARAMETERS``); at
``LOGIN_FAILURE_LIMIT`` either is locked out for ``LOGIN_LOCKOUT_MINUTES``. The login page (and the
admin's) then answers 429 with ``Retry-After`` and says so in words. The address is the socket's,
unless the operator declared trusted proxies: then the one the outermost of them saw.
"""

from __future__ import annotations

import math

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import ngettext

LOCKED_OUT_STATUS = 429


def client_ip(request: HttpRequest) -> str | None:
    """``REMOTE_ADDR``; behind ``TRUSTED_PROXY_COUNT`` proxies, the address the first of them saw (each
    proxy appends its peer to X-Forwarded-For, so it is the count-th entry from the right; anything to
    its left was written by the client and is not believed)."""
    remote = request.META.get("REMOTE_ADDR")
    count = settings.TRUSTED_PROXY_COUNT
    forwarded = [
        part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()
    ]
    if count and len(forwarded) >= count:
        return forwarded[-count]
    return remote


def locked_out(request: HttpRequest, original_response=None, credentials=None) -> HttpResponse:
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    minutes = max(1, math.ceil(seconds / 60))
    message = ngettext(
        "Too many failed logins for this account or from this address. Try again in %(minutes)d minute.",
        "Too many failed logins for this account or from this address. Try again in %(minutes)d minutes.",
        minutes,
    ) % {"minutes": minutes}
    context = {
        "form": AuthenticationForm(request),
        "locked_out": message,
        "next": request.POST.get("next", "") or request.GET.get("next", ""),
    }
    response = render(request, "registration/login.html", context, status=LOCKED_OUT_STATUS)
    response["Retry-After"] = str(seconds)
    return response
