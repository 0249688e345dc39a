"""``TokenUsageMiddleware``: pressure figures of the request actually sent (SPEC 7), in state
``token_usage``. Innermost in the stack, so it measures the compacted or summarized view.

It also sees every message enter the state from the model and the tools: each leaves with its text
cleaned (``text.clean_message``: no NUL, no lone surrogate, which no database or wire can carry) and
carrying its stored estimate (``tokens.with_estimate``), and each reported prompt-token count goes to the model's
calibration (shared with ``CompressionMiddleware``), against our raw estimate of the same request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from context_engine.config import CompressionConfig
from context_engine.middleware.measure import request_overhead, response_messages, system_tokens
from context_engine.middleware.memo import MessageTotals
from context_engine.policy.pressure import LastCall, pressure_figures, ratio
from context_engine.state import REQUEST_FINGERPRINT_KEY, TOKEN_USAGE_KEY, TokenUsageState
from context_engine.text import clean_message
from context_engine.tokens.calibration import CalibrationMemory, CalibrationSource
from context_engine.tokens.messages import (
    ESTIMATOR_NAME,
    TokenProfile,
    estimate_message,
    estimate_tools,
    messages_tokens,
    with_estimate,
)
from context_engine.tokens.prefix import request_fingerprint, shared_prefix
from context_engine.tokens.usage import count_call, response_usage

RUN_USAGE_KEY = "run"
THREAD_USAGE_KEY = "thread"


def _utcnow() -> datetime:
    return datetime.now(UTC)


class TokenUsageMiddleware(AgentMiddleware[TokenUsageState]):
    state_schema = TokenUsageState

    def __init__(
        self,
        *,
        config: CompressionConfig,
        profile: TokenProfile | None = None,
        calibration: CalibrationSource | None = None,
        now: Callable[[], datetime] = _utcnow,
    ) -> None:
        super().__init__()
        self.config = config
        self.profile = profile or config.profile
        self.calibration = calibration if calibration is not None else CalibrationMemory()
        self.now = now
        self._totals = MessageTotals(self.profile)

    # A run's provider usage starts from zero; the thread's keeps accumulating.
    def before_agent(self, state: Any, runtime: Runtime) -> dict[str, Any] | None:
        return (
            {TOKEN_USAGE_KEY: {RUN_USAGE_KEY: None}}
            if (state.get(TOKEN_USAGE_KEY) or {}).get(RUN_USAGE_KEY)
            else None
        )

    async def abefore_agent(self, state: Any, runtime: Runtime) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ExtendedModelResponse:
        return self._record(request, handler(request))

    async def awrap_model_call(self, request: ModelRequest, handler: Any) -> ExtendedModelResponse:
        return self._record(request, await handler(request))

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        return self._stored(handler(request))

    async def awrap_tool_call(self, request: ToolCallRequest, handler: Any) -> Any:
        return self._stored(await handler(request))

    def _stored(self, result: Any) -> Any:
        """A tool's result (a ``ToolMessage``, or a ``Command`` adding messages) with stored estimates."""
        if isinstance(result, ToolMessage):
            return with_estimate(clean_message(result), self.profile)
        update = getattr(result, "update", None)
        if isinstance(result, Command) and isinstance(update, dict) and update.get("messages"):
            messages = [with_estimate(clean_message(m), self.profile) for m in update["messages"]]
            return Command(**{**_command_fields(result), "update": {**update, "messages": messages}})
        return result

    def _record(self, request: ModelRequest, response: ModelResponse | AIMessage) -> ExtendedModelResponse:
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
        # The reply enters the state carrying its estimate: no later call, in any process, reads it again.
        response = ModelResponse(
            result=[with_estimate(clean_message(m), self.profile) for m in response.result],
            structured_response=response.structured_response,
        )
        update = self.snapshot(request, response)
        fingerprint = self._fingerprint(request)
        update["prefix_reuse"] = self._prefix_reuse(request, fingerprint, update["estimated_input_tokens"])
        return ExtendedModelResponse(
            model_response=response,
            command=Command(update={TOKEN_USAGE_KEY: update, REQUEST_FINGERPRINT_KEY: fingerprint}),
        )

    def _fingerprint(self, request: ModelRequest) -> list[str]:
        system = request.system_message.content if request.system_message else None
        tools = [getattr(t, "name", None) or str(t) for t in request.tools or ()]
        return request_fingerprint([system, tools], request.messages)

    def _prefix_reuse(self, request: ModelRequest, fingerprint: list[str], estimated: int) -> float | None:
        """The share of this request (our estimate) that repeats the previous one from its start: what a
        provider's prompt cache can serve. None for a thread's first request."""
        previous = (request.state or {}).get(REQUEST_FINGERPRINT_KEY)
        if not isinstance(previous, list) or not estimated:
            return None
        shared = shared_prefix(fingerprint, previous)
        if shared == 0:
            return 0.0
        fixed = request_overhead(request, self.profile)
        tokens = fixed + sum(estimate_message(m, self.profile) for m in request.messages[: shared - 1])
        return round(min(tokens / estimated, 1.0), 4)

    def snapshot(self, request: ModelRequest, response: ModelResponse) -> dict[str, Any]:
        """The ``token_usage`` fields written after one model call (merged into the existing value).
        A reported prompt-token count updates the model's calibration first (against our raw estimate
        of this very request, ``estimated_input_tokens``); the figures use the updated one."""
        profile, config = self.profile, self.config
        messages = request.messages
        estimated = request_overhead(request, profile) + self._totals.total(messages)
        produced = response_messages(response)
        next_input = estimated + messages_tokens(produced, profile)
        window = config.context_window
        usage = response_usage(produced)
        reported = (usage or {}).get("input_tokens")
        calibration = (
            self.calibration.observe(estimated=estimated, reported=reported)
            if reported
            else self.calibration.current()
        )
        llm_input = calibration.corrected(estimated)
        usage_ratio = ratio(llm_input, window)  # None when no window is known
        state: Mapping[str, Any] = request.state or {}
        previous: Mapping[str, Any] = state.get(TOKEN_USAGE_KEY) or {}
        return {
            "llm_input_tokens": llm_input,
            "estimated_input_tokens": estimated,
            "llm_message_count": len(messages),
            "system_tokens": system_tokens(request, profile),
            "tools_tokens": estimate_tools(request.tools or (), profile),
            "tool_count": len(request.tools or ()),
            "context_usage_ratio": min(1.0, usage_ratio) if usage_ratio is not None else None,
            "remaining_context_tokens": max(window - llm_input, 0) if window else None,
            # Anchored on the provider's prompt tokens for this call when it reported them.
            **pressure_figures(
                next_input_tokens=next_input,
                visible=messages,
                trigger_tokens=config.trigger_tokens,
                context_window=window,
                profile=profile,
                calibration=calibration,
                last_call=LastCall(estimated, (usage or {}).get("input_tokens")),  # raw, as next_input is
            ),
            "estimator": ESTIMATOR_NAME,
            "measured_at": self.now().isoformat(),
            "last_call_usage": usage,
            RUN_USAGE_KEY: count_call(usage, previous.get(RUN_USAGE_KEY)),
            THREAD_USAGE_KEY: count_call(usage, previous.get(THREAD_USAGE_KEY)),
        }


def _command_fields(command: Command[Any]) -> dict[str, Any]:
    return {"graph": command.graph, "resume": command.resume, "goto": command.goto}
