"""Server-rendered chat pages and the fragments the page reloads when its socket says something changed.

Commands go over HTTP (forms, or fetch from ``static/js/thread.js``); events arrive over the thread's
WebSocket. Each fragment (``_message.html``, ``_state_panel.html``, ``_run_status.html``,
and the compression panels of ``compression_panels``) renders both on page load and when the page fetches it after an event.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agent_platform.errors import ApplicationError, NotFound
from agent_platform.numbers import whole_number
from agent_platform.selectors import agent_list_enabled
from agent_platform.workdir import workdir_for
from context_engine.errors import StoreError
from context_engine.formats import CONVERSATION_HISTORY_DIR
from context_engine.policy.pressure import pressure_now
from context_engine.summary.reading import history_read
from context_engine.tokens.messages import format_tokens
from conversations import pages, run_signals, search, selectors, services
from conversations.access import can_act
from conversations.attachments import served_type
from conversations.branch_selectors import branch_number_of, numbers_annotate
from conversations.models import Conversation
from conversations.services import versions
from conversations.services.agent_switch import thread_agent_switch
from conversations.services.attachments import attachments_refusals, uploads_from
from conversations.services.intake import MESSAGE_MAX_CHARS
from conversations.throttles import message_throttled
from conversations.usage_selectors import usage_of_thread
from conversations.version_selectors import versions_annotate

# fetch() from thread.js sends this header; plain form posts redirect instead.
FETCH_HEADER = "x-requested-with"
FETCH_VALUE = "fetch"


def _is_fetch(request: HttpRequest) -> bool:
    return request.headers.get(FETCH_HEADER, "").lower() == FETCH_VALUE


def _not_found_as_404(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Missing, deleted and foreign threads all answer 404 (no existence leak)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(exc.message) from exc

    return wrapper


def _command_response(
    request: HttpRequest, thread_id: uuid.UUID, error: ApplicationError | None
) -> HttpResponse:
    """After a form command: fetch gets 202 (or the error's status and text); a plain post redirects."""
    if _is_fetch(request):
        if error is None:
            return HttpResponse(status=202)
        response = HttpResponse(
            _error_text(error), status=error.status, content_type="text/plain; charset=utf-8"
        )
        for header, value in getattr(error, "headers", {}).items():  # Retry-After of a 429
            response[header] = value
        return response
    if error is not None:
        messages.error(request, _error_text(error))
    return redirect("conversations:thread-detail", thread_id=thread_id)


def _error_text(error: ApplicationError) -> str:
    if error.code == "thread_busy":
        return _("The thread is busy right now. Try again in a moment.")
    if error.code in ("empty_message",):
        return _("Write something first.")
    if error.code == "not_interrupted":
        return _("The agent is no longer waiting for an answer.")
    return error.message


def _state_context(conversation: Conversation, user: AbstractBaseUser | AnonymousUser) -> dict[str, Any]:
    """Everything the side panels show, read at once so their figures agree: the meter and hint, the
    compression card, the memory panel, the run status. ``can_act``: the controls are shown (owner)."""
    values = selectors.thread_values(conversation=conversation)
    state = selectors.thread_state(conversation=conversation, values=values)
    token_usage = state.get("token_usage") or {}
    latest_run = state.get("latest_run")
    busy = bool(state["running"] or state["queued"] or state["interrupted"] or state["compressing"])
    running_run = selectors.run_running(conversation=conversation) if state["running"] else None
    agent = conversation.agent
    return {
        "can_act": can_act(conversation, user),
        "running_run": running_run,
        "conversation": conversation,
        "state": state,
        "token_usage": token_usage,
        # The one pressure function, on the agent's configuration as it is now (a retune shows at once).
        "pressure": pages.pressure_view(
            pressure_now(
                token_usage,
                trigger_tokens=agent.effective_trigger,
                context_window=agent.resolved_context_window,
            ),
            summary_active=bool(token_usage.get("summary_active")),
        ),
        "latest_run": latest_run,
        "thread_usage": usage_of_thread(conversation.pk),
        "busy": busy,
        "question": (state.get("interrupt") or {}).get("question") if state["interrupted"] else None,
        "values": values,  # the compression panels (``compression_panels`` tag) read them too
    }


@login_required
@require_GET
def thread_list(request: HttpRequest) -> HttpResponse:
    query = search.search_query(request.GET.get("q", ""))
    shared_allowed = search.shared_scope_allowed(request.user)
    scope = request.GET.get("scope", "")
    if scope not in (search.SCOPE_ARCHIVED, search.SCOPE_SHARED) or (
        scope == search.SCOPE_SHARED and not shared_allowed
    ):
        scope = ""
    threads = list(search.thread_search(user=request.user, query=query, scope=scope or search.SCOPE_MINE))
    search.search_hit_links(threads)  # a match opens at its message, whichever version holds it
    rows = [
        (thread, search.search_snippet(getattr(thread, "hit_content", None), query)) for thread in threads
    ]
    return render(
        request,
        "conversations/thread_list.html",
        {
            "rows": rows,
            "agents": agent_list_enabled(),
            "search": query,
            "scope": scope,
            "shared_allowed": shared_allowed,
        },
    )


@login_required
@require_POST
def thread_new(request: HttpRequest) -> HttpResponse:
    try:
        conversation = services.thread_create(
            user=request.user,
            agent_slug=request.POST.get("agent", ""),
            title=request.POST.get("title", ""),
        )
    except ApplicationError as error:
        messages.error(request, error.message)
        return redirect("conversations:thread-list")
    return redirect("conversations:thread-detail", thread_id=conversation.thread_id)


@login_required
@require_http_methods(["GET", "POST"])
@_not_found_as_404
def thread_delete(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST deletes (hides) the thread."""
    if request.method == "GET":
        conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
        return render(request, "conversations/thread_delete.html", {"conversation": conversation})
    services.thread_soft_delete(thread_id=thread_id, user=request.user)
    messages.success(
        request,
        ngettext(
            "Thread deleted. It stays in the bin for %(days)d day, where you can restore it.",
            "Thread deleted. It stays in the bin for %(days)d days, where you can restore it.",
            settings.THREAD_BIN_RETENTION_DAYS,
        )
        % {"days": settings.THREAD_BIN_RETENTION_DAYS},
    )
    return redirect("conversations:thread-list")


def thread_missing(request: HttpRequest, thread_id: uuid.UUID | None = None) -> HttpResponse:
    """The friendly 404 of a thread page: the caller's own thread still in the bin can be restored from
    here; anything else (never existed, someone else's, out of the bin) reads the same."""
    in_bin = (
        selectors.threads_in_bin(user=request.user).filter(thread_id=thread_id).first() if thread_id else None
    )
    return render(
        request,
        "conversations/thread_missing.html",
        {"in_bin": in_bin, "retention_days": settings.THREAD_BIN_RETENTION_DAYS},
        status=404,
    )


@login_required
@require_POST
@_not_found_as_404
def thread_rename(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    return _command(
        request,
        thread_id,
        lambda: services.thread_rename(
            thread_id=thread_id, user=request.user, title=request.POST.get("title", "")
        ),
    )


@login_required
@require_POST
@_not_found_as_404
def run_cancel(request: HttpRequest, thread_id: uuid.UUID, run_id: int | None = None) -> HttpResponse:
    """Stop (the running run, or ``run_id``) or remove a queued message from the queue."""
    return _command(
        request, thread_id, lambda: services.run_cancel(thread_id=thread_id, user=request.user, run_id=run_id)
    )


@login_required
@require_POST
@_not_found_as_404
def attachments_check(request: HttpRequest, thread_id: uuid.UUID) -> JsonResponse:
    """The composer's check of files as they are picked: every reason they would be refused at Send,
    all at once (``{"refused": [{"index", "reason"}]}``, empty when all may go; ``index`` null for the
    count). The owner's, as sending is."""
    conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    if not can_act(conversation, request.user):
        raise Http404
    refusals = attachments_refusals(files=request.FILES.getlist("files"))
    return JsonResponse({"refused": [{"index": r.index, "reason": r.reason} for r in refusals]})


@login_required
@require_POST
@_not_found_as_404
def turn_retry(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Retry: the failed or stopped last turn's request again, with a new run."""

    def retry() -> object:
        with message_throttled(request, with_files=False):
            return versions.turn_retry(thread_id=thread_id, user=request.user)

    return _command(request, thread_id, retry)


@login_required
@require_POST
@_not_found_as_404
def agent_switch(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Switch the thread's agent (owner only): the next turn runs with it; a plain post comes back to
    the thread with "Now using X — window N tokens"."""

    def switch() -> object:
        conversation = thread_agent_switch(
            thread_id=thread_id, user=request.user, agent_slug=request.POST.get("agent", "")
        )
        if not _is_fetch(request):
            messages.success(request, agent_budget_line(conversation.agent))
        return conversation

    return _command(request, thread_id, switch)


def agent_budget_line(agent: Any) -> str:
    """What a switch says: the agent the thread now uses, its window and its compression trigger."""
    return _("Now using %(agent)s — window %(window)s tokens, compression at %(trigger)s tokens.") % {
        "agent": agent.name,
        "window": format_tokens(agent.resolved_context_window),
        "trigger": format_tokens(agent.effective_trigger),
    }


@login_required
@require_GET
@_not_found_as_404
def thread_detail(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    try:
        conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    except NotFound:
        return thread_missing(request, thread_id)
    context = _state_context(conversation, request.user)
    messages_list = selectors.message_list_latest(conversation=conversation)
    context["messages_list"] = pages.transcript_order(messages_list)
    versions_annotate(messages=context["messages_list"])  # ‹ 1/2 › on edited and regenerated turns
    numbers_annotate(conversation=conversation, messages=context["messages_list"])
    context["branch_links"] = True  # each earlier version links to its whole branch
    context["boundary_seq"] = selectors.thread_folded_last_seq(
        conversation=conversation, values=context["values"]
    )
    context["boundary_number"] = branch_number_of(conversation=conversation, seq=context["boundary_seq"])
    context["saved_paths"] = selectors.thread_saved_results(conversation=conversation)
    context["message_max_chars"] = MESSAGE_MAX_CHARS  # the composer's counter shows it near the end
    context["attachment_max_file_bytes"] = settings.ATTACHMENT_MAX_FILE_BYTES  # refused when picked
    # Send's own words for a file over the limit; the page puts in the file's name and the limit.
    context["attachment_too_large"] = _("%(name)s is larger than %(limit)s.")
    context["first_seq"] = messages_list[0].seq if messages_list else 0
    # The agents the owner may switch the thread to, or regenerate the last reply with (enabled ones).
    context["switch_agents"] = list(agent_list_enabled()) if context["can_act"] else []
    context["earlier_count"] = (
        selectors.messages_earlier_count(conversation=conversation, before_seq=messages_list[0].seq)
        if messages_list
        else 0
    )
    running_run = context["running_run"]
    # A reload or a second tab during a reply shows what was streamed so far, then goes on from there.
    context["streamed_text"] = run_signals.stream_text(run_id=running_run.pk) if running_run else ""
    return render(request, "conversations/thread_detail.html", context)


@login_required
@require_POST
@_not_found_as_404
def message_send(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    files = request.FILES.getlist("files")

    def send() -> object:
        with message_throttled(request, with_files=bool(files)):
            return services.message_intake(
                thread_id=thread_id,
                user=request.user,
                content=request.POST.get("content", ""),
                request_id=request.POST.get("request_id") or None,
                attachments=uploads_from(files),
            )

    return _command(request, thread_id, send)


@login_required
@require_POST
@_not_found_as_404
def question_answer(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    def answer() -> object:
        with message_throttled(request, with_files=False):  # an answer pays for model calls as a send does
            return services.run_resume(
                thread_id=thread_id, user=request.user, answer=request.POST.get("answer", "")
            )

    return _command(request, thread_id, answer)


def _command(request: HttpRequest, thread_id: uuid.UUID, call: Callable[[], object]) -> HttpResponse:
    """Run one service call for a page form; its domain errors (not "not found") become the answer."""
    try:
        call()
    except NotFound:
        raise
    except ApplicationError as error:
        return _command_response(request, thread_id, error)
    return _command_response(request, thread_id, None)


@login_required
@require_GET
@_not_found_as_404
def fragment_messages(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Transcript entries after ``?after=<seq>``, each a ``_message.html``; ``?boundary=1`` marks where
    the model's word-for-word view begins (a re-render after a compression; new messages never move it)."""
    conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    if request.GET.get("before"):
        return _earlier_messages(request, conversation)
    after = whole_number(request.GET.get("after")) or 0
    boundary = None
    if request.GET.get("boundary"):
        values = selectors.thread_values(conversation=conversation)
        boundary = selectors.thread_folded_last_seq(conversation=conversation, values=values)
    return render(
        request,
        "conversations/_messages.html",
        {
            "conversation": conversation,
            "can_act": can_act(conversation, request.user),
            "messages_list": numbers_annotate(
                conversation=conversation,
                messages=versions_annotate(
                    messages=list(selectors.message_list(conversation=conversation, after_seq=after))
                ),
            ),
            "branch_links": True,
            "saved_paths": selectors.thread_saved_results(conversation=conversation),
            "boundary_seq": boundary,
            "boundary_number": branch_number_of(conversation=conversation, seq=boundary),
        },
    )


def _earlier_messages(request: HttpRequest, conversation: Conversation) -> HttpResponse:
    """``?before=<seq>``: the page of messages before ``seq`` (a long thread's earlier messages, newest
    page first), then the line saying how many remain, with its button."""
    before = max(1, whole_number(request.GET.get("before")) or 1)
    page = selectors.message_list_latest(conversation=conversation, before_seq=before)
    first_seq = page[0].seq if page else before
    return render(
        request,
        "conversations/_earlier_messages.html",
        {
            "conversation": conversation,
            "can_act": can_act(conversation, request.user),
            "messages_list": numbers_annotate(
                conversation=conversation, messages=versions_annotate(messages=pages.transcript_order(page))
            ),
            "branch_links": True,
            "saved_paths": selectors.thread_saved_results(conversation=conversation),
            "earlier_count": selectors.messages_earlier_count(
                conversation=conversation, before_seq=first_seq
            ),
            "first_seq": first_seq,
        },
    )


@login_required
@require_GET
@_not_found_as_404
def fragment_stream(request: HttpRequest, thread_id: uuid.UUID) -> JsonResponse:
    """The reply being streamed: ``{"run_id", "text"}`` (the page catches up after a gap)."""
    conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    run = selectors.run_running(conversation=conversation)
    text = run_signals.stream_text(run_id=run.pk) if run else ""
    return JsonResponse({"run_id": run.pk if run else None, "text": text})


@login_required
@require_GET
@_not_found_as_404
def fragment_state(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Every panel whose figures must agree, rendered together (meter and hint, compression card,
    memory panel, run status); the page swaps each by its id."""
    conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    context = _state_context(conversation, request.user)
    return render(request, "conversations/_state_fragments.html", context)


@login_required
@require_GET
@_not_found_as_404
def workdir_file(request: HttpRequest, thread_id: uuid.UUID, path: str) -> HttpResponse:
    """A saved workdir file (a receipt's full output, a history file), for whoever may see the thread:
    a page with its size and SHA-256 (the receipt's, so a reader can check it); ``?download=1`` gives
    the file itself, ``?raw=1`` the text alone."""
    conversation = selectors.thread_get(thread_id=thread_id, user=request.user)
    try:
        chunks, size = workdir_for(conversation).open_stream(path)
    except StoreError as exc:  # includes paths outside the workdir boundary
        raise Http404(_("No such file.")) from exc
    # Typed from its first chunk (the file may be in a bucket and large); never as HTML.
    head = next(chunks, b"")
    content_type, inline = served_type(_whole_characters(head) if len(head) < size else head)
    is_text = content_type.startswith("text/plain")
    if request.GET.get("download") or request.GET.get("raw") or not is_text:
        # Streamed from disk or the bucket: a large file never sits whole in the web process.
        response = StreamingHttpResponse(itertools.chain([head], chunks), content_type=content_type)
        response["Content-Length"] = str(size)
        as_attachment = bool(request.GET.get("download")) or not inline
        response["Content-Disposition"] = content_disposition_header(as_attachment, path.rsplit("/", 1)[-1])
    else:
        data = b"".join([head, *chunks])  # the page shows the text and its SHA-256
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:  # text at its start only: the bytes as they are, as a download
            response = HttpResponse(data, content_type="application/octet-stream")
            response["Content-Disposition"] = content_disposition_header(True, path.rsplit("/", 1)[-1])
        else:
            file = pages.saved_file(path=path, text=text)
            # A history file reads as a conversation; its numbered lines and plain text are a click away.
            readable = file.path.startswith(CONVERSATION_HISTORY_DIR + "/") and not request.GET.get("lines")
            response = render(
                request,
                "conversations/workdir_file.html",
                {
                    "conversation": conversation,
                    "file": file,
                    "history": history_read(file.text) if readable else None,
                },
            )
    # User content: never let the browser sniff it into HTML.
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _whole_characters(head: bytes) -> bytes:
    """``head`` without a UTF-8 character cut off at its end (a chunk boundary is not a character's)."""
    for cut in range(4):
        try:
            (head[: len(head) - cut] if cut else head).decode("utf-8")
        except UnicodeDecodeError:
            continue
        return head[: len(head) - cut] if cut else head
    return head
