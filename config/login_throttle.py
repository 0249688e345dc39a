"""Login throttling (django-axes): which failures lock a login out, how it is answered, and whose
address it was.

Failed logins are counted per account-and-address pair (``AXES_LOCKOUT_PARAMETERS``): at
``LOGIN_FAILURE_LIMIT`` that account is locked out from that address only, for
``LOGIN_LOCKOUT_MINUTES`` (a stranger cannot lock the admin out of their own address). And per
address over all accounts (``PairAndAddressHandler``): at the higher ``LOGIN_ADDRESS_FAILURE_LIMIT``
the address is locked out for every account (password spraying). The login page (and the admin's)
then answers 429 with ``Retry-After`` and says so in words. The address is the socket's, unless the
operator declared trusted proxies: then the one the outermost of them saw.
"""

from __future__ import annotations

import math

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Sum
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


def address_failures(request: HttpRequest) -> int:
    """Failed logins from the request's address within the cool-off, over every account."""
    address = getattr(request, "axes_ip_address", None)
    if not address:
        return 0
    attempts = AccessAttempt.objects.filter(
        ip_address=address, attempt_time__gte=get_cool_off_threshold(request)
    )
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


class PairAndAddressHandler(AxesDatabaseHandler):
    """Axes' database handler, plus the per-address bound (see the module docstring)."""

    def is_locked(self, request, credentials=None) -> bool:
        if super().is_locked(request, credentials):
            return True
        return address_failures(request) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs) -> None:
        super().user_login_failed(sender, credentials, request=request, **kwargs)
        # The failure that reaches the address's bound is answered as a lockout already, as axes
        # answers the one that reaches the pair's.
        if request is not None and address_failures(request) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT:
            request.axes_locked_out = True


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
