"""The spend guard's branch of ``CompressionMiddleware`` (issue 14 item 4): the summary was held back,
so the request goes out compacted; only if that would overflow the model's window are the oldest
unpinned messages dropped from view (appended to the history file first, a fixed note in their place,
no model call)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any, Protocol

from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage

from context_engine.errors import CompressionError
from context_engine.events import LEVEL_COMPACTION
from context_engine.middleware.emitter import Emitter
from context_engine.middleware.responses import with_update
from context_engine.state import SESSION_ID_KEY
from context_engine.steps import Blocking, CallModel, Steps
from context_engine.store import ResultStore
from context_engine.summary.call import drop_update, session_id_from
from context_engine.summary.cutoff import is_summary_message
from context_engine.summary.dropping import build_drop_message, drop_cutoff
from context_engine.summary.fold_plan import receipt_paths, view_lead
from context_engine.summary.history import build_summarization_event, history_path, render_history_section
from context_engine.summary.identifiers import LossReport
from context_engine.summary.loss import fold_loss_report, read_saved_texts
from context_engine.summary.spend_guard import GuardDecision
from context_engine.tokens.messages import TokenProfile


class _Middleware(Protocol):
    """What this branch uses of ``CompressionMiddleware``."""

    store: ResultStore
    profile: TokenProfile
    now: Callable[[], datetime]

    def estimate(self, overhead: int, messages: Sequence[BaseMessage]) -> int: ...

    def window_limit(self, overflowed_at: int | None) -> int | None: ...

    def ended(
        self, folded: str, after: int, sent: Sequence[BaseMessage], overhead: int
    ) -> dict[str, Any]: ...


def held_back(
    mw: _Middleware,
    request: ModelRequest,
    view: list[BaseMessage],
    *,
    pinned: frozenset[str],
    overflowed_at: int | None,
    previous: Mapping[str, Any] | None,
    overhead: int,
    emitter: Emitter,
    decision: GuardDecision,
    replacements: Sequence[BaseMessage],
) -> Steps[ModelResponse | ExtendedModelResponse]:
    """The spend guard held the summary back: send the compacted view; only if it would overflow
    the window, first drop the oldest unpinned messages from view (saved to the history file
    first, a fixed note in their place: no model call)."""
    tokens = mw.estimate(overhead, view)
    limit = mw.window_limit(overflowed_at)
    guard = decision.as_dict()
    if limit is None or tokens < limit:
        response = yield CallModel(request.override(messages=view))
        emitter.complete(
            level=LEVEL_COMPACTION,
            after_tokens=tokens,
            spend_guard=guard,
            **mw.ended(LEVEL_COMPACTION, tokens, view, overhead),
        )
        return with_update(response, {}, replacements)

    cutoff = drop_cutoff(view, pinned_ids=pinned, max_tokens=limit - overhead, profile=mw.profile)
    if cutoff <= 0:
        raise CompressionError(
            f"The spend guard held a summary back ({decision.reason}) and the conversation "
            f"(about {tokens} tokens) does not fit the model's context window."
        )
    head = view[:cutoff]
    dropped = [m for m in head if m.id not in pinned or is_summary_message(m)]
    kept_pinned = [m for m in head if m.id in pinned and not is_summary_message(m)]
    state = request.state or {}
    session_id = session_id_from(state.get(SESSION_ID_KEY))
    file_path = history_path(session_id)
    section = render_history_section(dropped, now=mw.now())
    yield Blocking(partial(mw.store.append_text, file_path, section))
    lead_summary = view[0] if is_summary_message(view[0]) else None
    note = build_drop_message(
        dropped=sum(1 for m in dropped if not is_summary_message(m)),
        file_path=file_path,
        previous_summary=lead_summary,
    )
    event = build_summarization_event(
        previous=previous,
        local_cutoff=cutoff,
        summary_message=note,
        file_path=file_path,
        lead=view_lead(request.messages, view, previous["cutoff_index"] if previous else None),
        pinned_ids=[m.id for m in kept_pinned if m.id],
    )
    final = [note, *kept_pinned, *view[cutoff:]]
    saved = yield Blocking(partial(read_saved_texts, mw.store, receipt_paths(dropped)))
    loss: LossReport = fold_loss_report(dropped, summary=str(note.content), kept=final[1:], saved_texts=saved)
    response = yield CallModel(request.override(messages=final))
    after = mw.estimate(overhead, final)
    emitter.complete(
        level=LEVEL_COMPACTION,
        after_tokens=after,
        **mw.ended(LEVEL_COMPACTION, after, final, overhead),
        cutoff_index=event["cutoff_index"],
        dropped_messages=len(dropped),
        file_path=file_path,
        spend_guard=guard,
        loss_report={**loss.as_dict(), "repair_calls": 0, "repaired": False},
    )
    return with_update(
        response, drop_update(state, event=event, session_id=session_id, previous=previous), replacements
    )
