"""The spend guard's branch of the compression middleware (issue 14 item 4): the summary was held back,
so the compacted view goes out as it is; only if it would overflow the window are the oldest unpinned
messages dropped from view first (to the history file, a fixed note in their place, no model call),
cut by both measures (our raw estimate and the calibrated one), and only if the rest fits."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage

from context_engine.errors import CompressionError
from context_engine.events import LEVEL_COMPACTION
from context_engine.middleware.emitter import Emitter
from context_engine.middleware.responses import with_update
from context_engine.policy import trigger as policy
from context_engine.policy.overflow import held_back_too_long
from context_engine.steps import CallModel, Steps
from context_engine.store import ResultStore
from context_engine.summary.call import drop_update
from context_engine.summary.dropping import drop_cutoff, drop_span, plan_drop
from context_engine.summary.fold_plan import view_lead
from context_engine.summary.spend_guard import GuardDecision
from context_engine.tokens.calibration import Calibration
from context_engine.tokens.messages import TokenProfile, messages_tokens


def send_held_back(
    request: ModelRequest,
    view: list[BaseMessage],
    *,
    pinned: Collection[str],
    previous: Mapping[str, Any] | None,
    overhead: int,
    overflowed_at: int | None,
    emitter: Emitter,
    guard: GuardDecision,
    replacements: Sequence[BaseMessage],
    store: ResultStore,
    profile: TokenProfile,
    calibration: Calibration,
    context_window: int | None,
    now: datetime,
) -> Steps[ModelResponse | ExtendedModelResponse]:
    """Send the compacted ``view`` (the pinned ids ``pinned`` never leave it), or drop its oldest
    messages first when it would not fit; ``overhead``: the request's fixed part in raw tokens."""

    def sizes(messages: Sequence[BaseMessage]) -> tuple[int, int]:
        raw = overhead + messages_tokens(messages, profile)
        return raw, calibration.corrected(raw)

    state = request.state or {}
    raw, tokens = sizes(view)
    limit = policy.window_limit(context_window=context_window, overflowed_at=overflowed_at)
    if policy.held_back_fits(tokens, raw=raw, limit=limit):
        response = yield CallModel(request.override(messages=view))
        emitter.sent(level=LEVEL_COMPACTION, after_tokens=tokens, messages=view, spend_guard=guard.as_dict())
        return with_update(response, {}, replacements)
    budget = policy.raw_within(limit, factor=calibration.factor) - overhead  # type: ignore[arg-type]
    cutoff = drop_cutoff(view, pinned_ids=pinned, max_tokens=budget, profile=profile)
    drop: dict[str, Any] = {
        "cutoff": cutoff,
        "pinned_ids": pinned,
        "state": state,
        "previous": previous,
        "lead": view_lead(request.messages, view, previous["cutoff_index"] if previous else None),
        "now": now,
    }
    # What the drop leaves must fit the window by both measures before anything is written.
    after_raw, after = sizes(plan_drop(view, **drop).final)
    send_limit = policy.send_limit(context_window=context_window, overflowed_at=overflowed_at)
    if cutoff <= 0 or not policy.fits_window(after_raw, after, limit=send_limit):
        raise CompressionError(held_back_too_long(guard.reason, max(raw, tokens)))
    plan, loss = yield from drop_span(view, store=store, **drop)
    response = yield CallModel(request.override(messages=plan.final))
    emitter.sent(
        level=LEVEL_COMPACTION,
        after_tokens=after,
        messages=plan.final,
        cutoff_index=plan.event["cutoff_index"],
        dropped_messages=len(plan.dropped),
        file_path=plan.file_path,
        spend_guard=guard.as_dict(),
        loss_report={**loss.as_dict(), "repair_calls": 0, "repaired": False},
    )
    update = drop_update(state, event=plan.event, session_id=plan.session_id, previous=previous)
    return with_update(response, update, replacements)
