"""The preview's size after, computed rather than estimated, when the agent's summarizer is local code
(issue 24): a deterministic summarizer the service injects (a "summary sizer": the summary prompt in,
the summarizer's reply out; never a provider call). The compression is carried out as applying it
would (``force_summarize``: same plan, prompt, validation, never-bigger check, reference index and
repair pass) with every write staged and dropped, so the preview's figure is the applied one."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from context_engine.config import CompressionConfig, SpendLimits
from context_engine.errors import StoreError, SummaryError
from context_engine.manual.apply import (
    NO_READING,
    REASON_NOT_SMALLER,
    STATUS_COMPLETED,
    Reading,
    force_summarize,
)
from context_engine.manual.preview import FoldPreview
from context_engine.state import SESSION_ID_KEY, SUMMARY_EVENT_KEY
from context_engine.steps import Blocking, CallModel, Steps, Summarize
from context_engine.store import ResultStore, StagedStore
from context_engine.summary.dropping import session_id_from
from context_engine.summary.indexing import stand_in_session_id
from context_engine.tokens.messages import TokenProfile, messages_tokens

# The summary prompt -> the reply a summary call would get (a message, or its text). Local and
# deterministic: the same prompt always gets the same reply, so the preview equals the apply.
SummarySizer = Callable[[str], Any]


def sized_preview(
    preview: FoldPreview,
    values: Mapping[str, Any],
    *,
    sizer: SummarySizer,
    config: CompressionConfig,
    store: ResultStore,
    profile: TokenProfile,
    reading: Reading = NO_READING,
) -> FoldPreview:
    """``preview`` with its size after (and the summary's size) as applying it would produce them, one
    number with no range (``estimate_exact``). Unchanged when it folds nothing or the summarizer's
    reply would not be a summary (the apply would fail: the estimate stays what the page shows). A
    summary that would not be smaller than what it folds gives the size before: nothing is applied.

    The session id a thread's first summary names is drawn when it is applied: a stand-in of the same
    shape takes its place here (every id of that shape has the same token estimate)."""
    if not preview.foldable:
        return preview
    state = dict(values)
    if session_id_from(state.get(SESSION_ID_KEY)) != state.get(SESSION_ID_KEY):
        state[SESSION_ID_KEY] = stand_in_session_id(state.get("messages") or [])
    steps = force_summarize(
        state,
        # The spend guard decides whether the call is made, not how big its summary is.
        config=dataclasses.replace(config, spend=SpendLimits()),
        store=StagedStore(store),  # every write (media, saved results, the history section) dropped
        profile=profile,
        now=datetime.now(UTC),
        reading=dataclasses.replace(reading, before_tokens=preview.before_tokens),
    )
    try:
        applied = _drive(steps, sizer)
    except (SummaryError, StoreError):
        return preview
    if applied.status == STATUS_COMPLETED:
        after, summary = applied.after_tokens, applied.summary_tokens or 0
        message = applied.update[SUMMARY_EVENT_KEY]["summary_message"]
        index = max(messages_tokens([message], profile) - summary, 0)  # what the index adds to it
    elif applied.reason == REASON_NOT_SMALLER:
        after = preview.before_tokens
        summary = int((applied.reason_detail or {}).get("tokens") or preview.folded_tokens)
        index = 0
    else:
        return preview
    return dataclasses.replace(
        preview,
        estimated_after_tokens=after,
        estimated_after_range=(after, after),
        estimate_unsure=False,
        estimate_exact=True,
        summary_estimate_tokens=summary,
        index_tokens=index,
    )


def _drive(steps: Steps[Any], sizer: SummarySizer) -> Any:
    """``run_sync`` without a chat model: the summary comes from ``sizer``, file work runs here."""
    try:
        effect = next(steps)
        while True:
            if isinstance(effect, CallModel):  # pragma: no cover - forced compression never calls the agent
                raise RuntimeError("A forced compression does not call the agent model.")
            try:
                value = sizer(effect.prompt) if isinstance(effect, Summarize) else _blocking(effect)
            except Exception as exc:
                effect = steps.throw(exc)
            else:
                effect = steps.send(value)
    except StopIteration as stop:
        return stop.value


def _blocking(effect: Blocking) -> Any:
    return effect.fn()
