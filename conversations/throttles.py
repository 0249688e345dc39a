"""The throttles of message intake (``agent_platform.throttle``): every send counts against the user's
send limits, with their queued and running runs as the work "at once"; a send with files also holds
an upload slot while its files are read and saved."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.http import HttpRequest

from agent_platform.throttle import SEND, UPLOAD, throttled
from conversations.selectors import runs_active_count


@contextlib.contextmanager
def message_throttled(request: HttpRequest, *, with_files: bool) -> Iterator[None]:
    with throttled(request, SEND, running=runs_active_count(user=request.user)):
        if not with_files:
            yield
            return
        with throttled(request, UPLOAD):
            yield
