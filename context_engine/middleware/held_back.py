"""The spend guard's branch of the compression middleware (issue 14 item 4): the summary was held back,
so the compacted view goes out as it is; only if it would overflow the window are the oldest unpinned
messages dropped from view first (to the history file, a fixed note in their place, no model call),
cut by both measures (our raw estimate and the calibrated one), and only if the rest fits."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage

from context_engine.errors import CompressionError
from context_engine.events import LEVEL_COMPACTION
from context_engine.middleware.emitter import Emitter
from context_engine.middleware.responses import with_messages, with_update
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


@dataclass(frozen=True)
class HeldBackSend:
    """A compacted ``view`` whose summary the spend guard held back (``guard``): the pinned ids
    ``pinned`` never leave it; ``overhead``: the request's fixed part in raw tokens; ``overflowed_at``:
    what the provider rejected, if it did; ``replacements``: the overflow clip's."""

    request: ModelRequest
    view: list[BaseMessage]
    pinned: Collection[str]
    previous: Mapping[str, Any] | None
    overhead: int
    overflowed_at: int | None
    guard: GuardDecision
    replacements: Sequence[BaseMessage]
    now: datetime


@dataclass(frozen=True)
class Sending:
    """The middleware's side of a send: where events go, where files go, and how tokens are counted."""

    emitter: Emitter
    store: ResultStore
    profile: TokenProfile
    calibration: Calibration
    context_window: int | None

    def sizes(self, overhead: int, messages: Sequence[BaseMessage]) -> tuple[int, int]:
        """A request of ``messages``: our raw estimate, and the calibrated one."""
        raw = overhead + messages_tokens(messages, self.profile)
        return raw, self.calibration.corrected(raw)


def send_held_back(held: HeldBackSend, via: Sending) -> Steps[ModelResponse | ExtendedModelResponse]:
    """Send the compacted view, or drop its oldest messages first when it would not fit."""
    raw, tokens = via.sizes(held.overhead, held.view)
    limit = policy.window_limit(context_window=via.context_window, overflowed_at=held.overflowed_at)
    guard = held.guard.as_dict()
    if limit is None or policy.held_back_fits(tokens, raw=raw, limit=limit):
        response: ModelResponse = yield CallModel(with_messages(held.request, held.view))
        via.emitter.sent(level=LEVEL_COMPACTION, after_tokens=tokens, messages=held.view, spend_guard=guard)
        return with_update(response, {}, held.replacements)
    budget = policy.raw_within(limit, factor=via.calibration.factor) - held.overhead
    cutoff = drop_cutoff(held.view, pinned_ids=held.pinned, max_tokens=budget, profile=via.profile)
    state = held.request.state or {}
    plan = plan_drop(
        held.view,
        cutoff=cutoff,
        pinned_ids=held.pinned,
        state=state,
        previous=held.previous,
        lead=view_lead(held.request.messages, held.view, _cutoff_index(held.previous)),
        now=held.now,
    )
    # What the drop leaves must fit the window by both measures before anything is written.
    after_raw, after = via.sizes(held.overhead, plan.final)
    send_limit = policy.send_limit(context_window=via.context_window, overflowed_at=held.overflowed_at)
    if cutoff <= 0 or not policy.fits_window(after_raw, after, limit=send_limit):
        figure = policy.failed_figure(raw, tokens, limit=limit)
        raise CompressionError(held_back_too_long(held.guard.reason or "", figure))
    _, loss = yield from drop_span(plan, store=via.store)
    dropped: ModelResponse = yield CallModel(with_messages(held.request, plan.final))
    via.emitter.sent(
        level=LEVEL_COMPACTION,
        after_tokens=after,
        messages=plan.final,
        cutoff_index=plan.event["cutoff_index"],
        dropped_messages=len(plan.dropped),
        file_path=plan.file_path,
        spend_guard=guard,
        loss_report={**loss.as_dict(), "repair_calls": 0, "repaired": False},
    )
    update = drop_update(state, event=plan.event, session_id=plan.session_id, previous=held.previous)
    return with_update(dropped, update, held.replacements)


def _cutoff_index(previous: Mapping[str, Any] | None) -> int | None:
    return previous["cutoff_index"] if previous else None
