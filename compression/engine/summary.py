"""The summary step shared by automatic (in-run) and manual compression: append the span to the
history file, ask the model for a strict summary, and build the ``_summarization_event`` update."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage

from compression.engine.config import CompressionConfig
from compression.engine.history import (
    SummarizationEvent,
    build_summarization_event,
    build_summary_message,
    format_summary_prompt,
    history_path,
    new_session_id,
    render_history_section,
    summary_text,
)
from compression.engine.media import offload_media
from compression.engine.state import (
    SESSION_ID_KEY,
    SUMMARY_EVENT_KEY,
    SUMMARY_EVENTS_KEY,
    SUMMARY_USAGE_KEY,
    TOKEN_USAGE_KEY,
    push_summary_event,
)
from compression.engine.steps import Blocking, Steps, Summarize
from compression.engine.store import ResultStore, StoreError
from compression.engine.tokens import TokenProfile, with_estimate
from compression.engine.usage import count_call

SUMMARY_INPUT_SHARE = 0.75  # of the context window, for the summary call's input


@dataclass(frozen=True)
class SummaryOutcome:
    event: SummarizationEvent
    session_id: str
    file_path: str
    usage: dict[str, Any] | None


def valid_event(event: Any) -> Mapping[str, Any] | None:
    """A well-formed ``_summarization_event`` from state, else None (a malformed one hides nothing)."""
    if not isinstance(event, Mapping):
        return None
    cutoff, summary = event.get("cutoff_index"), event.get("summary_message")
    if isinstance(cutoff, int) and cutoff >= 0 and isinstance(summary, BaseMessage):
        return event
    return None


def session_id_from(value: Any) -> str:
    """The state's session id when it is a safe one, else a new one."""
    if isinstance(value, str):
        try:
            history_path(value)
        except ValueError:
            pass
        else:
            return value
    return new_session_id()


def tail_cap(config: CompressionConfig, *, overflowed_at: int | None = None) -> int:
    """Most tokens the verbatim tail may keep after a summary: half of T, or of what the provider
    just rejected as too long when that is smaller (SPEC 6 step 4)."""
    limit = config.trigger_tokens if overflowed_at is None else min(config.trigger_tokens, overflowed_at)
    return limit // 2


def summary_budget(config: CompressionConfig, *, overflowed_at: int | None = None) -> int:
    """Input tokens for the summary call: most of the window (room left for the summary itself),
    at most half of what the provider just rejected as too long."""
    window = config.context_window
    budget = int(window * SUMMARY_INPUT_SHARE) if window else config.trigger_tokens
    return budget if overflowed_at is None else min(budget, overflowed_at // 2)


def summarize_span(
    to_summarize: Sequence[BaseMessage],
    *,
    state: Mapping[str, Any],
    previous: Mapping[str, Any] | None,
    local_cutoff: int,
    config: CompressionConfig,
    store: ResultStore,
    profile: TokenProfile,
    budget: int,
    now: datetime,
) -> Steps[SummaryOutcome]:
    """Inline media saved first (neither the history file nor the summary model ever receives base64),
    then the summary, then its history section (required); any failure raises before state changes.

    The section is written only once a valid summary exists, so a failed or interrupted summary leaves
    no history file or section behind."""
    media = yield Blocking(partial(offload_media, to_summarize, store=store))
    if media.failed:
        raise StoreError(f"Could not save inline media before summarizing: {media.failed[0].error}")
    to_summarize = media.messages
    session_id = session_id_from(state.get(SESSION_ID_KEY))
    file_path = history_path(session_id)
    prompt = format_summary_prompt(
        to_summarize, prompt=config.summary_prompt, max_tokens=budget, profile=profile
    )
    reply = yield Summarize(prompt)
    text = summary_text(reply)
    section = render_history_section(to_summarize, now=now)
    yield Blocking(partial(store.append_text, file_path, section))
    event = build_summarization_event(
        previous=previous,
        local_cutoff=local_cutoff,
        summary_message=with_estimate(build_summary_message(text, file_path=file_path), profile),
        file_path=file_path,
    )
    usage = getattr(reply, "usage_metadata", None)
    return SummaryOutcome(
        event=event, session_id=session_id, file_path=file_path, usage=dict(usage) if usage else None
    )


def summary_update(
    state: Mapping[str, Any], outcome: SummaryOutcome, previous: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The state update that makes ``outcome`` the model-visible history (undo history kept bounded)."""
    return {
        SUMMARY_EVENT_KEY: outcome.event,
        SESSION_ID_KEY: outcome.session_id,
        SUMMARY_EVENTS_KEY: push_summary_event(state.get(SUMMARY_EVENTS_KEY), previous),  # type: ignore[arg-type]
        TOKEN_USAGE_KEY: {
            SUMMARY_USAGE_KEY: count_call(
                outcome.usage, (state.get(TOKEN_USAGE_KEY) or {}).get(SUMMARY_USAGE_KEY)
            )
        },
    }
