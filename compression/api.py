"""Thread-maintenance API: /api/threads/{thread_id}/compress (a job: 202 with it, or the result with
``?wait=true``), its jobs (read, cancel), the preview and the undo. Not a run: never queued behind one."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from ninja import Header, Path, Query, Router, Schema, Status

from agent_platform.api_errors import error_responses
from agent_platform.errors import Unprocessable
from agent_platform.throttle import COMPRESS, throttled
from compression import services

router = Router(tags=["compression"])
MAX_IDEMPOTENCY_KEY = 200
PREVIEW_ID_MAX = 64
JOB_ID_MAX = 2**63 - 1  # a bigger number is no job (and no database error)


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


class JobErrorOut(Schema):
    code: str
    message: str


class JobOut(Schema):
    id: int
    thread_id: str
    # queued | running | succeeded | failed | cancelled | no_change
    status: str
    trigger: str
    attempts: int
    preview_id: str | None = None
    error: JobErrorOut | None = None
    result: CompressOut | None = None
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None


class PreviewFoldedOut(Schema):
    count: int
    tokens: int
    first_seq: int | None = None
    last_seq: int | None = None
    first_number: int | None = None  # as the page numbers them (1..n along the current branch)
    last_number: int | None = None


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
    # Computed with the agent's local summarizer (the offline model): the figure applying it gives.
    estimate_exact: bool = False
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


@router.post("/{thread_id}/compress", response={200: CompressOut, 202: JobOut, **COMPRESS_ERRORS})
def thread_compress(
    request: HttpRequest,
    response: HttpResponse,
    thread_id: uuid.UUID,
    idempotency_key: str | None = Header(default=None, alias="Idempotency-Key"),
    preview_id: str | None = Query(default=None, min_length=1, max_length=PREVIEW_ID_MAX),
    wait: bool = Query(default=False),
):
    """Start compressing an idle thread's context: `202` with the job (`Location`: where to read it),
    which runs in the background (events on the thread's socket). `?wait=true` answers `200` with the
    result when the job ends within `COMPRESSION_WAIT_SECONDS` (its error status when it fails), else
    `202`; `Location` names the job either way.
    409 `thread_busy` while a run is running or queued, the thread waits on the user or another
    compression is under way; the same `Idempotency-Key` returns the same job (and, once it ended, its
    result without a second summary). With `?preview_id=...` (from `.../compress/preview`), 409
    `stale_preview` and nothing folded when the thread changed since that preview. 429 `rate_limited`
    (with `Retry-After`) over the user's compression limits."""
    key = None if idempotency_key is None else idempotency_key.strip()
    # Printable only: a NUL byte, for one, cannot be stored in PostgreSQL (it would be a 500).
    if key is not None and not (0 < len(key) <= MAX_IDEMPOTENCY_KEY and key.isprintable()):
        raise Unprocessable(
            _("Idempotency-Key must be 1 to %(max)d printable characters.") % {"max": MAX_IDEMPOTENCY_KEY},
            code="invalid_input",
        )
    # The in-flight slot is held while this request works (with ``?wait=true``, until the job ends).
    with throttled(request, COMPRESS):
        job = services.thread_compress_submit(
            thread_id=thread_id, user=request.user, idempotency_key=key, preview_id=preview_id
        )
        response["Location"] = reverse(
            "api:thread_compress_job", kwargs={"thread_id": thread_id, "job_id": job.pk}
        )
        if wait:
            job = services.compress_job_wait(job_id=job.pk, timeout=settings.COMPRESSION_WAIT_SECONDS)
            if job.finished:
                services.compress_job_raise(job)
                return Status(200, job.result)
        else:
            job = services.compress_job_get(thread_id=thread_id, job_id=job.pk, user=request.user)
    return Status(202, services.compress_job_body(job))


@router.get("/{thread_id}/compress/jobs/{job_id}", response={200: JobOut, **ERRORS})
def thread_compress_job(
    request: HttpRequest, thread_id: uuid.UUID, job_id: int = Path(..., ge=1, le=JOB_ID_MAX)
):
    """A compression job of the thread: its status, and its result or error once it ended."""
    job = services.compress_job_get(thread_id=thread_id, job_id=job_id, user=request.user)
    return services.compress_job_body(job)


@router.post("/{thread_id}/compress/jobs/{job_id}/cancel", response={200: JobOut, **ERRORS})
def thread_compress_job_cancel(
    request: HttpRequest, thread_id: uuid.UUID, job_id: int = Path(..., ge=1, le=JOB_ID_MAX)
):
    """Stop a compression before it is applied: `cancelled`, the thread unchanged (a summary call in
    flight is abandoned). 409 `job_finished` once it ended otherwise."""
    job = services.compress_job_cancel(thread_id=thread_id, job_id=job_id, user=request.user)
    return services.compress_job_body(job)


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
