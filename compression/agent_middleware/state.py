"""The state schema the compression middlewares add to the agent state (keys and reducers live in
``compression.engine.state``)."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentState
from langchain.agents.middleware.types import PrivateStateAttr

from compression.engine.history import SummarizationEvent
from compression.engine.state import merge_token_usage


class CompressionState(AgentState):
    # PrivateStateAttr: kept in checkpoints, left out of the graph's input and output schemas.
    _summarization_event: Annotated[NotRequired[SummarizationEvent | None], PrivateStateAttr]
    _summarization_session_id: Annotated[NotRequired[str | None], PrivateStateAttr]
    _summary_events: Annotated[NotRequired[list[SummarizationEvent | None]], PrivateStateAttr]
    # The spend guard's ledger of summary calls in the last hour: [{"at": iso, "input_tokens": n}].
    _summary_calls: Annotated[NotRequired[list[dict[str, Any]]], PrivateStateAttr]
    # Reducer last: LangGraph only looks at the final Annotated item.
    token_usage: Annotated[NotRequired[dict[str, Any]], merge_token_usage]


class TokenUsageState(AgentState):
    token_usage: Annotated[NotRequired[dict[str, Any]], merge_token_usage]
