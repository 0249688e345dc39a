"""Threads API: /api/threads/... Thin operations, one service or selector call each; sync (session auth)."""

from __future__ import annotations

import uuid

from django.http import HttpRequest
from ninja import File, Form, Query, Router, Schema, Status, UploadedFile

from agent_platform.api_errors import error_responses
from conversations import selectors, services
from conversations.schemas import (
    IntakeOut,
    MessageIn,
    MessageOut,
    PinOut,
    ResumeIn,
    RunOut,
    StateOut,
    ThreadCreateIn,
    ThreadOut,
    ThreadUpdateIn,
)
from conversations.services.attachments import uploads_from
from conversations.throttles import message_throttled

router = Router(tags=["threads"])


class MessageFilters(Schema):
    after_seq: int = 0
    limit: int = selectors.MESSAGE_PAGE_MAX


@router.post("", response={201: ThreadOut, **error_responses(400, 404)})
def thread_create(request: HttpRequest, payload: ThreadCreateIn):
    return Status(
        201, services.thread_create(user=request.user, agent_slug=payload.agent, title=payload.title)
    )


@router.get("", response={200: list[ThreadOut], **error_responses()})
def thread_list(request: HttpRequest):
    return selectors.thread_list(user=request.user)


@router.get("/{thread_id}", response={200: ThreadOut, **error_responses(404)})
def thread_get(request: HttpRequest, thread_id: uuid.UUID):
    return selectors.thread_get(thread_id=thread_id, user=request.user)


@router.patch("/{thread_id}", response={200: ThreadOut, **error_responses(404, 409, 422)})
def thread_update(request: HttpRequest, thread_id: uuid.UUID, payload: ThreadUpdateIn):
    return services.thread_rename(thread_id=thread_id, user=request.user, title=payload.title)


@router.delete("/{thread_id}", response={204: None, **error_responses(404, 409)})
def thread_delete(request: HttpRequest, thread_id: uuid.UUID):
    services.thread_soft_delete(thread_id=thread_id, user=request.user)
    return Status(204, None)


@router.get("/{thread_id}/messages", response={200: list[MessageOut], **error_responses(404)})
def message_list(request: HttpRequest, thread_id: uuid.UUID, filters: Query[MessageFilters]):
    conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    return selectors.message_list(conversation=conversation, after_seq=filters.after_seq, limit=filters.limit)


@router.post("/{thread_id}/messages", response={202: IntakeOut, **error_responses(400, 404, 409, 413, 429)})
def message_create(request: HttpRequest, thread_id: uuid.UUID, payload: MessageIn):
    """Send a message. 429 `rate_limited` (with `Retry-After`) over the user's send limits."""
    with message_throttled(request, with_files=False):
        result = services.message_intake(
            thread_id=thread_id, user=request.user, content=payload.content, request_id=payload.request_id
        )
    return Status(202, {"message": result.message, "run": result.run})


@router.post("/{thread_id}/messages/upload", response={202: IntakeOut, **error_responses(404, 409, 413, 429)})
def message_create_with_files(
    request: HttpRequest,
    thread_id: uuid.UUID,
    files: File[list[UploadedFile]],
    content: Form[str] = "",
    request_id: Form[str | None] = None,
):
    """A message with attached files (multipart/form-data: ``files`` repeated, ``content``, ``request_id``).
    429 `rate_limited` (with `Retry-After`) over the user's send or upload limits."""
    with message_throttled(request, with_files=True):
        uploads = uploads_from(files)
        result = services.message_intake(
            thread_id=thread_id,
            user=request.user,
            content=content,
            request_id=request_id,
            attachments=uploads,
        )
    return Status(202, {"message": result.message, "run": result.run})


@router.post(
    "/{thread_id}/messages/{message_id}/pin", response={200: PinOut, **error_responses(404, 409, 422)}
)
def message_pin(request: HttpRequest, thread_id: uuid.UUID, message_id: int):
    """Pin a message: every compression keeps it (with its tool call or results) verbatim, right after
    the summary. 422 `pin_limit_exceeded` (with `room_tokens`) when the agent's pinned-token cap is hit.
    A message the summary already folded comes back into the model's view right after the summary; while
    a run or a compression is under way that is refused: 409 `pin_folded_busy`."""
    return services.message_pin(thread_id=thread_id, message_id=message_id, user=request.user)


@router.delete(
    "/{thread_id}/messages/{message_id}/pin", response={200: PinOut, **error_responses(404, 409, 422)}
)
def message_unpin(request: HttpRequest, thread_id: uuid.UUID, message_id: int):
    """Unpin a message; it leaves the model's view at the next compression."""
    return services.message_unpin(thread_id=thread_id, message_id=message_id, user=request.user)


@router.post("/{thread_id}/resume", response={202: IntakeOut, **error_responses(400, 404, 409)})
def thread_resume(request: HttpRequest, thread_id: uuid.UUID, payload: ResumeIn):
    result = services.run_resume(thread_id=thread_id, user=request.user, answer=payload.answer)
    return Status(202, {"message": result.message, "run": result.run})


@router.get("/{thread_id}/state", response={200: StateOut, **error_responses(404)})
def thread_state(request: HttpRequest, thread_id: uuid.UUID):
    conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    return selectors.thread_state(conversation=conversation)


@router.post("/{thread_id}/runs/current/cancel", response={202: RunOut, **error_responses(404, 409)})
def run_cancel_current(request: HttpRequest, thread_id: uuid.UUID):
    """Stop the running run: it ends ``cancelled`` after its next streamed chunk, keeping what it wrote."""
    return Status(202, services.run_cancel(thread_id=thread_id, user=request.user))


@router.post("/{thread_id}/runs/{run_id}/cancel", response={202: RunOut, **error_responses(404, 409)})
def run_cancel(request: HttpRequest, thread_id: uuid.UUID, run_id: int):
    """Stop a running run, or remove a queued one from the queue."""
    return Status(202, services.run_cancel(thread_id=thread_id, user=request.user, run_id=run_id))
