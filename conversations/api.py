"""Threads API: /api/threads/... Thin operations, one service or selector call each; sync (session auth)."""

from __future__ import annotations

import uuid

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.http import content_disposition_header
from ninja import Body, Field, File, Form, Query, Router, Schema, Status, UploadedFile

from agent_platform.api_errors import error_responses
from conversations import export, search, selectors, services
from conversations.branch_selectors import message_branch, numbers_annotate
from conversations.schemas import (
    AgentSwitchIn,
    AgentSwitchOut,
    BranchContinueOut,
    BranchForkIn,
    BranchForkOut,
    BranchOut,
    IntakeOut,
    MessageEditIn,
    MessageIn,
    MessageOut,
    MessageVersionsOut,
    PinOut,
    RegenerateAgentIn,
    RegenerateIn,
    ResumeIn,
    RunOut,
    StateOut,
    ThreadCreateIn,
    ThreadListOut,
    ThreadOut,
    ThreadUpdateIn,
)
from conversations.services.agent_switch import thread_agent_switch
from conversations.services.attachments import uploads_from
from conversations.services.branches import branch_continue, branch_fork
from conversations.services.versions import message_edit, reply_regenerate, turn_retry
from conversations.throttles import message_throttled
from conversations.version_selectors import message_versions

router = Router(tags=["threads"])


class MessageFilters(Schema):
    after_seq: int = 0
    limit: int = selectors.MESSAGE_PAGE_MAX


@router.post("", response={201: ThreadOut, **error_responses(400, 404)})
def thread_create(request: HttpRequest, payload: ThreadCreateIn):
    return Status(
        201, services.thread_create(user=request.user, agent_slug=payload.agent, title=payload.title)
    )


class ThreadFilters(Schema):
    q: str = Field("", max_length=search.QUERY_MAX_CHARS, description="Words in a title or a message.")
    scope: str = Field(
        search.SCOPE_MINE,
        pattern=f"^({'|'.join(search.SCOPES)})$",
        description="`mine`, `archived` (the caller's archived threads), or `shared`: others' threads "
        "(holders of `conversations.view_conversation`).",
    )


@router.get("", response={200: list[ThreadListOut], **error_responses()})
def thread_list(request: HttpRequest, filters: Query[ThreadFilters]):
    """The caller's threads (or, with ``scope=shared``, the others' they may read), newest activity
    first; with ``q``, those whose title or messages match, each with a ``snippet`` of the match."""
    threads = search.thread_search(user=request.user, query=filters.q, scope=filters.scope)
    query = search.search_query(filters.q)
    rows = list(threads)
    search.search_hit_links(rows)
    for thread in rows:
        snippet = search.search_snippet(getattr(thread, "hit_content", None), query)
        thread.snippet = str(snippet) if snippet else ""
    return rows


def _export_response(request: HttpRequest, thread_id: uuid.UUID, extension: str) -> HttpResponse:
    data = export.thread_export(conversation=selectors.thread_get(thread_id=thread_id, user=request.user))
    if extension == "md":
        response = HttpResponse(export.export_markdown(data), content_type="text/markdown; charset=utf-8")
    else:
        response = HttpResponse(export.export_json(data), content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(
        True, export.export_filename(data, extension)
    )
    return response


def _download(media_type: str) -> dict:
    """The OpenAPI description of an export's 200: a file of ``media_type``, sent as an attachment."""
    return {
        "responses": {
            200: {"description": "A download", "content": {media_type: {"schema": {"type": "string"}}}}
        }
    }


@router.get(
    "/{thread_id}/export.md",
    response={200: str, **error_responses(404)},
    url_name="thread-export-markdown",
    openapi_extra=_download("text/markdown"),
)
def thread_export_markdown(request: HttpRequest, thread_id: uuid.UUID):
    """The thread as Markdown: transcript, attachments with SHA-256, compression records (a download)."""
    return _export_response(request, thread_id, "md")


@router.get(
    "/{thread_id}/export.json", response={200: dict, **error_responses(404)}, url_name="thread-export-json"
)
def thread_export_json(request: HttpRequest, thread_id: uuid.UUID):
    """The thread as JSON: the same content as the Markdown export, for programs (a download)."""
    return _export_response(request, thread_id, "json")


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
    rows = list(
        selectors.message_list(conversation=conversation, after_seq=filters.after_seq, limit=filters.limit)
    )
    return numbers_annotate(conversation=conversation, messages=rows)


@router.post("/{thread_id}/messages", response={202: IntakeOut, **error_responses(400, 404, 409, 413, 429)})
def message_create(request: HttpRequest, thread_id: uuid.UUID, payload: MessageIn):
    """Send a message. 429 `rate_limited` (with `Retry-After`) over the user's send limits."""
    with message_throttled(request, with_files=False):
        result = services.message_intake(
            thread_id=thread_id, user=request.user, content=payload.content, request_id=payload.request_id
        )
    return Status(202, {"message": result.message, "run": result.run})


@router.post(
    "/{thread_id}/messages/upload", response={202: IntakeOut, **error_responses(400, 404, 409, 413, 429)}
)
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


@router.post(
    "/{thread_id}/messages/{message_id}/edit",
    response={202: IntakeOut, **error_responses(400, 404, 409, 422, 429)},
)
def message_edit_send(request: HttpRequest, thread_id: uuid.UUID, message_id: int, payload: MessageEditIn):
    """Send a new version of a user message: it and what followed leave the current branch (kept as
    earlier versions); the model answers it on a fork from before the original. 409 while a run is
    queued or running; 422 `message_not_editable` for a message that opened no turn. A retry with the
    same `request_id` returns the first result and makes no second version."""
    with message_throttled(request, with_files=False):
        result = message_edit(
            thread_id=thread_id,
            message_id=message_id,
            user=request.user,
            content=payload.content,
            request_id=payload.request_id,
        )
    return Status(202, {"message": result.message, "run": result.run})


@router.post("/{thread_id}/regenerate", response={202: IntakeOut, **error_responses(400, 404, 409, 422, 429)})
def thread_regenerate(
    request: HttpRequest, thread_id: uuid.UUID, payload: Body[RegenerateAgentIn | None] = None
):
    """Answer the last user message again; the earlier reply stays as an earlier version. A retry with
    the same `request_id` (optional body `{"request_id": ..., "agent": ...}`) returns the first result
    and starts no second run. With `agent`, the thread switches to that agent first and it answers (404
    `agent_not_found` for one that is missing or disabled)."""
    request_id = payload.request_id if payload else None
    agent = payload.agent if payload else None
    with message_throttled(request, with_files=False):
        result = reply_regenerate(
            thread_id=thread_id, user=request.user, request_id=request_id, agent_slug=agent
        )
    return Status(202, {"message": result.message, "run": result.run})


@router.post("/{thread_id}/agent", response={200: AgentSwitchOut, **error_responses(404, 409)})
def thread_agent_switch_set(request: HttpRequest, thread_id: uuid.UUID, payload: AgentSwitchIn):
    """Switch the thread's agent to another enabled one (owner only): the next turn runs with it, on the
    same history, and the thread's budget and compression follow the new agent's window at once. 409
    `thread_busy` while a run or a compression is under way; 404 `agent_not_found` for an agent that is
    missing or disabled."""
    return thread_agent_switch(thread_id=thread_id, user=request.user, agent_slug=payload.agent)


@router.post("/{thread_id}/retry", response={202: IntakeOut, **error_responses(404, 409, 422, 429)})
def thread_retry(request: HttpRequest, thread_id: uuid.UUID, payload: Body[RegenerateIn | None] = None):
    """Send the last turn's request again with a new run, when that turn failed or was stopped (422
    otherwise). A retry with the same `request_id` returns the first result and starts no second run."""
    request_id = payload.request_id if payload else None
    with message_throttled(request, with_files=False):
        result = turn_retry(thread_id=thread_id, user=request.user, request_id=request_id)
    return Status(202, {"message": result.message, "run": result.run})


@router.get(
    "/{thread_id}/messages/{message_id}/versions", response={200: MessageVersionsOut, **error_responses(404)}
)
def message_versions_get(request: HttpRequest, thread_id: uuid.UUID, message_id: int):
    """The versions of a user message and of the reply to it (read-only for viewers)."""
    conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    return message_versions(conversation=conversation, message_id=message_id)


@router.get("/{thread_id}/messages/{message_id}/branch", response={200: BranchOut, **error_responses(404)})
def message_branch_get(request: HttpRequest, thread_id: uuid.UUID, message_id: int):
    """The whole branch holding a message (any version, earlier ones too), numbered 1..n as shown,
    read-only; whoever may read the thread."""
    conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    view = message_branch(conversation=conversation, message_id=message_id)
    return {
        "thread_id": conversation.thread_id,
        "message_id": view.message.pk,
        "branch": view.number,
        "current": view.current,
        "messages": view.messages,
    }


@router.post(
    "/{thread_id}/messages/{message_id}/continue",
    response={200: BranchContinueOut, **error_responses(400, 404, 409, 422)},
)
def message_branch_continue(
    request: HttpRequest, thread_id: uuid.UUID, message_id: int, payload: Body[RegenerateIn | None] = None
):
    """Make the branch holding this message current again (the model's view follows); owner only.
    409 `thread_busy` while a run or a compression holds the thread; 422 `branch_not_restorable`."""
    result = branch_continue(
        thread_id=thread_id,
        message_id=message_id,
        user=request.user,
        request_id=payload.request_id if payload else None,
    )
    return {
        "thread_id": result.conversation.thread_id,
        "message_id": result.message.pk,
        "branch": result.branch,
        "current": True,
        "created": result.created,
    }


@router.post(
    "/{thread_id}/messages/{message_id}/fork",
    response={200: BranchForkOut, 201: BranchForkOut, **error_responses(400, 404, 422)},
)
def message_branch_fork(
    request: HttpRequest, thread_id: uuid.UUID, message_id: int, payload: Body[BranchForkIn | None] = None
):
    """A new thread of the caller's own with the branch holding this message, up to it (201; 200 for
    a retry of the same `request_id`); whoever may read the thread."""
    result = branch_fork(
        thread_id=thread_id,
        message_id=message_id,
        user=request.user,
        request_id=payload.request_id if payload else None,
        title=payload.title if payload else None,
    )
    thread = result.conversation
    body = {
        "thread_id": thread.thread_id,
        "title": thread.title,
        "messages": result.copied,
        "url": reverse("conversations:thread-detail", kwargs={"thread_id": thread.thread_id}),
        "created": result.created,
    }
    return Status(201 if result.created else 200, body)


@router.post("/{thread_id}/resume", response={202: IntakeOut, **error_responses(400, 404, 409, 429)})
def thread_resume(request: HttpRequest, thread_id: uuid.UUID, payload: ResumeIn):
    """Answer the agent's ``ask_user`` question. An answer pays for the model calls that follow, as a send
    does: 429 `rate_limited` (with `Retry-After`) over the user's send limits."""
    with message_throttled(request, with_files=False):
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
