"""Thread-maintenance API: /api/threads/{thread_id}/compress and its undo. Not a run: never queued."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _
from ninja import Header, Query, Router, Schema

from agent_platform.api_errors import error_responses
from agent_platform.errors import Unprocessable
from agent_platform.throttle import COMPRESS, throttled
from compression import services

router = Router(tags=["compression"])
MAX_IDEMPOTENCY_KEY = 200
PREVIEW_ID_MAX = 64


class CompressOut(Schema):
    status: str
    before_tokens: int
    after_tokens: int
    compressed_messages: int
    file_path: str | None = None
    reason: str | None = None
    pinned_messages: int = 0
    summary_tokens: int | None = None
    folded_tokens: int | None = None
    loss_report: dict[str, Any] | None = None
    spend_guard: dict[str, Any] | None = None
    # compacted | summarized | no_change_needed | could_not_reach_budget, and why (code and figures).
    outcome: str | None = None
    reason_detail: dict[str, Any] | None = None


class PreviewFoldedOut(Schema):
    count: int
    tokens: int
    first_seq: int | None = None
    last_seq: int | None = None


class PreviewTailOut(Schema):
    count: int
    tokens: int
    first_seq: int | None = None


class PreviewPinnedOut(Schema):
    count: int
    tokens: int
    seqs: list[int]


class PreviewIdentifiersOut(Schema):
    total: int
    at_risk: int
    in_saved_files: int
    at_risk_list: list[str]


class PreviewOut(Schema):
    preview_id: str
    status: str
    reason: str | None = None
    busy: bool
    before_tokens: int
    estimated_after_tokens: int
    # The estimate's likely range; ``estimate_unsure`` when it is too wide for one number.
    estimated_after_range: list[int]
    estimate_unsure: bool
    summary_estimate_tokens: int
    folded: PreviewFoldedOut
    kept_tail: PreviewTailOut
    pinned: PreviewPinnedOut
    identifiers: PreviewIdentifiersOut


class UndoOut(Schema):
    status: str
    before_tokens: int
    after_tokens: int


ERRORS = error_responses(403, 404, 409, 502)
COMPRESS_ERRORS = error_responses(403, 404, 409, 429, 502)


@router.post("/{thread_id}/compress", response={200: CompressOut, **COMPRESS_ERRORS})
def thread_compress(
    request: HttpRequest,
    thread_id: uuid.UUID,
    idempotency_key: str | None = Header(default=None, alias="Idempotency-Key"),
    preview_id: str | None = Query(default=None, min_length=1, max_length=PREVIEW_ID_MAX),
):
    """Compress an idle thread's context now. 409 `thread_busy` while a run is running or queued or the
    thread waits on the user; a retry with the same `Idempotency-Key` returns the first result. With
    `?preview_id=...` (from `.../compress/preview`), 409 `stale_preview` and nothing folded when the
    thread changed since that preview. 429 `rate_limited` (with `Retry-After`) over the user's
    compression limits."""
    key = None if idempotency_key is None else idempotency_key.strip()
    # Printable only: a NUL byte, for one, cannot be stored in PostgreSQL (it would be a 500).
    if key is not None and not (0 < len(key) <= MAX_IDEMPOTENCY_KEY and key.isprintable()):
        raise Unprocessable(
            _("Idempotency-Key must be 1 to %(max)d printable characters.") % {"max": MAX_IDEMPOTENCY_KEY},
            code="invalid_input",
        )
    with throttled(request, COMPRESS):
        outcome = services.thread_compress(
            thread_id=thread_id,
            user=request.user,
            idempotency_key=key,
            preview_id=preview_id,
        )
    return outcome.result


@router.post("/{thread_id}/compress/preview", response={200: PreviewOut, **ERRORS})
def thread_compress_preview(request: HttpRequest, thread_id: uuid.UUID):
    """What a manual compression would do now: the messages it would fold (range, count, tokens), what
    stays (kept tail, pinned), the estimated size after, the identifiers at risk. No model call, nothing
    written. Apply it with `POST .../compress?preview_id=...`."""
    return services.thread_compress_preview(thread_id=thread_id, user=request.user)


@router.post("/{thread_id}/compress/undo", response={200: UndoOut, **ERRORS})
def thread_compress_undo(request: HttpRequest, thread_id: uuid.UUID):
    """Restore the model-visible history from before the latest compression; 409 `nothing_to_undo`."""
    return services.thread_compress_undo(thread_id=thread_id, user=request.user)
