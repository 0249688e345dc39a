"""The agent state compression reads and writes, in one home: every key, the summary event type, the
pure reducers and the state schemas the two middlewares add to the agent state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, NotRequired, TypedDict

from langchain.agents.middleware import AgentState
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import HumanMessage

SUMMARY_EVENT_KEY = "_summarization_event"
SESSION_ID_KEY = "_summarization_session_id"
# Final: keys of SummarizationEvent, which mypy accepts as TypedDict keys only as literal constants.
PINNED_IDS_KEY: Final = "pinned_message_ids"  # in the summary event: messages before the cutoff kept verbatim
REFERENCE_INDEX_KEY: Final = "reference_index"  # in the summary event: the index that follows the summary

SUMMARY_EVENTS_KEY = "_summary_events"
TOKEN_USAGE_KEY = "token_usage"
SUMMARY_USAGE_KEY = "summary_model_usage"
# Inside a summary usage dict: the repair call's own part of it (already included in the totals).
REPAIR_USAGE_KEY = "repair"
MAX_SUMMARY_EVENTS = 10
# The run config's ``configurable`` key carrying the thread's pinned message ids (read at run start).
PINNED_IDS_CONFIG_KEY = "pinned_message_ids"
# The run config's ``configurable`` key carrying the run's stop check (a cheap callable, True once the
# user pressed Stop): waiting tools and the compression middleware's summary call watch it.
STOP_CHECK_CONFIG_KEY = "stop_requested"
SUMMARY_CALLS_KEY = "_summary_calls"  # the spend guard's ledger: [{at, input_tokens}] of the last hour
SUMMARY_REFUSALS_KEY = "_summary_refusals"  # the circuit breaker's refused model summaries: [{at, code}]
# The compaction horizon (issue 40): how many effective messages go out compacted, fixed at the last
# compression event, so nothing before the newest message changes until the next one.
COMPACTION_HORIZON_KEY = "_compaction_horizon"
REQUEST_FINGERPRINT_KEY = "_request_fingerprint"

__all__ = [
    "PINNED_IDS_KEY",
    "CompressionState",
    "SummarizationEvent",
    "TokenUsageState",
    "MAX_SUMMARY_EVENTS",
    "PINNED_IDS_CONFIG_KEY",
    "STOP_CHECK_CONFIG_KEY",
    "REPAIR_USAGE_KEY",
    "SESSION_ID_KEY",
    "COMPACTION_HORIZON_KEY",
    "REQUEST_FINGERPRINT_KEY",
    "SUMMARY_CALLS_KEY",
    "SUMMARY_EVENTS_KEY",
    "SUMMARY_EVENT_KEY",
    "SUMMARY_REFUSALS_KEY",
    "SUMMARY_USAGE_KEY",
    "TOKEN_USAGE_KEY",
    "merge_token_usage",
    "push_summary_event",
]


class SummarizationEvent(TypedDict):
    cutoff_index: int  # global index into state messages: messages[cutoff_index:] are kept verbatim
    summary_message: HumanMessage
    file_path: str | None
    # Pinned messages before the cutoff, shown verbatim right after the summary (issue 14).
    pinned_message_ids: NotRequired[list[str]]
    # The reference index that follows the summary (issue 25): entries with their history-file lines.
    reference_index: NotRequired[dict[str, Any]]


def merge_token_usage(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Shallow merge, so the two middlewares (and manual compression) can each write their own keys in
    the same step; a key written as ``None`` is dropped (that is how stale fields are cleared)."""
    merged = dict(left or {})
    for key, value in (right or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def push_summary_event(
    history: list[SummarizationEvent | None] | None, previous: SummarizationEvent | None
) -> list[SummarizationEvent | None]:
    """The bounded undo history (newest last) after ``previous`` is replaced; ``None`` stands for
    "no summary yet", so undoing the first summary restores the raw conversation."""
    return [*(history or ()), previous][-MAX_SUMMARY_EVENTS:]


class CompressionState(AgentState):
    # PrivateStateAttr: kept in checkpoints, left out of the graph's input and output schemas.
    _summarization_event: Annotated[NotRequired[SummarizationEvent | None], PrivateStateAttr]
    _summarization_session_id: Annotated[NotRequired[str | None], PrivateStateAttr]
    _summary_events: Annotated[NotRequired[list[SummarizationEvent | None]], PrivateStateAttr]
    # The spend guard's ledger of summary calls in the last hour: [{"at": iso, "input_tokens": n}].
    _summary_calls: Annotated[NotRequired[list[dict[str, Any]]], PrivateStateAttr]
    # The summary circuit breaker's refusals within its window: [{"at": iso, "code": why}].
    _summary_refusals: Annotated[NotRequired[list[dict[str, Any]]], PrivateStateAttr]
    # The compaction horizon: {"count", "cutoff", "pinned", "lean"} (``compaction.horizon``).
    _compaction_horizon: Annotated[NotRequired[dict[str, Any] | None], PrivateStateAttr]
    # Reducer last: LangGraph only looks at the final Annotated item.
    token_usage: Annotated[NotRequired[dict[str, Any]], merge_token_usage]


class TokenUsageState(AgentState):
    # The fingerprints of the latest request (``tokens.prefix``): the next one's prefix reuse.
    _request_fingerprint: Annotated[NotRequired[list[str]], PrivateStateAttr]
    token_usage: Annotated[NotRequired[dict[str, Any]], merge_token_usage]
