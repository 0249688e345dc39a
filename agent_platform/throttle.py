"""Per-user throttles of the actions that cost money or disk: message sends, uploads, compressions.

Each action has two limits, both settings (``THROTTLE_<ACTION>_PER_MINUTE`` and
``THROTTLE_<ACTION>_CONCURRENT``; 0 turns a limit off): attempts per minute, counted in the cache by
django-ratelimit (a fixed window per user; Redis when ``REDIS_URL`` is set, so every process shares
it), and work of that kind running at once. What "running" means is the caller's to say: the runs a
user has queued or running for sends (``running=``), the requests of that kind still in flight for
uploads and compressions (held by this module's cache counter while the block runs). Over either
limit: ``RateLimited``, answered 429 ``rate_limited`` with ``Retry-After``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django_ratelimit.core import get_usage

from agent_platform.errors import ApplicationError

SEND = "send"
UPLOAD = "upload"
COMPRESS = "compress"
ACTIONS = (SEND, UPLOAD, COMPRESS)
# When one of the user's running tasks will end is unknown: ask the client to wait this long.
CONCURRENT_RETRY_AFTER_SECONDS = 5
# An in-flight slot of a process that died mid-request frees itself after this long.
IN_FLIGHT_TTL_SECONDS = 600

_WHAT = {
    SEND: gettext_lazy("messages"),
    UPLOAD: gettext_lazy("uploads"),
    COMPRESS: gettext_lazy("compressions"),
}


class RateLimited(ApplicationError):
    status = 429
    code = "rate_limited"
    default_message = gettext_lazy("Too many requests. Try again in a moment.")

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, retry_after=retry_after)
        self.retry_after = retry_after
        self.headers = {"Retry-After": str(retry_after)}


@dataclass(frozen=True)
class Limits:
    per_minute: int
    concurrent: int


def limits_for(action: str) -> Limits:
    name = action.upper()
    return Limits(
        per_minute=getattr(settings, f"THROTTLE_{name}_PER_MINUTE"),
        concurrent=getattr(settings, f"THROTTLE_{name}_CONCURRENT"),
    )


def _user_key(_group: str, request: HttpRequest) -> str:
    return str(request.user.pk)


def _in_flight_key(action: str, user_id: object) -> str:
    return f"throttle:in-flight:{action}:{user_id}"


def _refuse_concurrent(action: str, limit: int) -> RateLimited:
    return RateLimited(
        _("Too many %(what)s at once: at most %(limit)s. Try again when one has finished.")
        % {"what": _WHAT[action], "limit": limit},
        retry_after=CONCURRENT_RETRY_AFTER_SECONDS,
    )


def _count_attempt(request: HttpRequest, action: str, per_minute: int) -> None:
    usage = get_usage(
        request, group=f"throttle.{action}", key=_user_key, rate=f"{per_minute}/m", increment=True
    )
    if usage is not None and usage["should_limit"]:
        # The window's last second still belongs to it: the next one starts a second later.
        seconds = max(1, usage["time_left"] + 1)
        raise RateLimited(
            _("Too many %(what)s: at most %(limit)s a minute. Try again in %(seconds)s s.")
            % {"what": _WHAT[action], "limit": per_minute, "seconds": seconds},
            retry_after=seconds,
        )


@contextlib.contextmanager
def throttled(request: HttpRequest, action: str, *, running: int | None = None) -> Iterator[None]:
    """Admit one ``action`` of ``request.user`` or raise ``RateLimited``.

    With ``running`` (the user's work of this kind in progress, counted by the caller) the concurrency
    limit is checked against it; without, the block itself holds an in-flight slot until it exits. A
    refused attempt still counts in its minute, as any attempt does.
    """
    limits = limits_for(action)
    held = None
    if limits.concurrent and running is not None and running >= limits.concurrent:
        raise _refuse_concurrent(action, limits.concurrent)
    if limits.concurrent and running is None:
        held = _in_flight_key(action, request.user.pk)
        cache.add(held, 0, IN_FLIGHT_TTL_SECONDS)
        try:
            in_flight = cache.incr(held)
        except ValueError:  # expired between the two calls
            cache.add(held, 1, IN_FLIGHT_TTL_SECONDS)
            in_flight = 1
        if in_flight > limits.concurrent:
            cache.decr(held)
            raise _refuse_concurrent(action, limits.concurrent)
    try:
        if limits.per_minute:
            _count_attempt(request, action, limits.per_minute)
        yield
    finally:
        if held is not None:
            with contextlib.suppress(ValueError):  # the slot expired meanwhile
                cache.decr(held)
