"""Thread-maintenance API: /api/threads/{thread_id}/compress and its undo. Not a run: never queued."""

from __future__ import annotations

import uuid

from django.http import HttpRequest
from django.utils.translation import gettext as _
from ninja import Header, Router, Schema

from agent_platform.api_errors import error_responses
from agent_platform.errors import Unprocessable
from compression import services

router = Router(tags=["compression"])
MAX_IDEMPOTENCY_KEY = 200


class CompressOut(Schema):
    status: str
    before_tokens: int
    after_tokens: int
    compressed_messages: int
    file_path: str | None = None
    reason: str | None = None


class UndoOut(Schema):
    status: str
    before_tokens: int
    after_tokens: int


ERRORS = error_responses(403, 404, 409, 502)


@router.post("/{thread_id}/compress", response={200: CompressOut, **ERRORS})
def thread_compress(
    request: HttpRequest,
    thread_id: uuid.UUID,
    idempotency_key: str | None = Header(default=None, alias="Idempotency-Key"),
):
    """Compress an idle thread's context now. 409 `thread_busy` while a run is running or queued or the
    thread waits on the user; a retry with the same `Idempotency-Key` returns the first result."""
    key = None if idempotency_key is None else idempotency_key.strip()
    # Printable only: a NUL byte, for one, cannot be stored in PostgreSQL (it would be a 500).
    if key is not None and not (0 < len(key) <= MAX_IDEMPOTENCY_KEY and key.isprintable()):
        raise Unprocessable(
            _("Idempotency-Key must be 1 to %(max)d printable characters.") % {"max": MAX_IDEMPOTENCY_KEY},
            code="invalid_input",
        )
    outcome = services.thread_compress(thread_id=thread_id, user=request.user, idempotency_key=key)
    return outcome.result


@router.post("/{thread_id}/compress/undo", response={200: UndoOut, **ERRORS})
def thread_compress_undo(request: HttpRequest, thread_id: uuid.UUID):
    """Restore the model-visible history from before the latest compression; 409 `nothing_to_undo`."""
    return services.thread_compress_undo(thread_id=thread_id, user=request.user)
