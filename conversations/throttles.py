"""The throttles of every request that pays for a model call (``agent_platform.throttle``): sends,
answers to ``ask_user``, edits, regenerations and their retries all count against the user's send
limits, with their queued and running runs as the work "at once"; a send with files also holds an
upload slot while its files are read and saved.

The "at once" limit is atomic: the user's row is locked (``SELECT ... FOR UPDATE``) before their runs
are counted and held until the request's run is committed, so two requests of one user never both
count the same free slot (16 parallel sends meet the limit exactly on PostgreSQL; SQLite serializes
writers anyway).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.contrib.auth import get_user_model
from django.db import transaction
from django.http import HttpRequest

from agent_platform.throttle import SEND, UPLOAD, throttled
from conversations.selectors import runs_active_count


@contextlib.contextmanager
def message_throttled(request: HttpRequest, *, with_files: bool) -> Iterator[None]:
    """Admit one model-paying request of ``request.user`` (or raise ``RateLimited``); the block queues
    its run inside the same transaction, under the user's row lock."""
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=request.user.pk).exists()
        with throttled(request, SEND, running=runs_active_count(user=request.user)):
            if not with_files:
                yield
                return
            with throttled(request, UPLOAD):
                yield
