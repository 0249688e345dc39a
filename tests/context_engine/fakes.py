"""Fakes at the chat-model boundary for the agent-middleware tests, and a direct-call harness."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.constants import TAG_NOSTREAM
from pydantic import Field

from tests.context_engine.chats import as_summary

SYSTEM = "You are a careful research assistant."


class Verbatim(str):
    """A scripted summary answered exactly as written: a bad one, to show it is refused."""


class ScriptedChatModel(BaseChatModel):
    """Agent calls answer from ``replies`` (AIMessage, or an exception to raise; the last repeats);
    summary calls (tagged nostream) answer from ``summaries`` (text or exception; the last repeats).

    A scripted summary text stands for a valid summary that starts with it: the default prompt's
    headings it lacks are appended (``as_summary``), unless it is ``Verbatim``."""

    replies: list[Any] = Field(default_factory=lambda: [AIMessage(content="done")])
    summaries: list[Any] = Field(default_factory=lambda: ["## SESSION INTENT\nsummarized"])
    summary_usage: dict[str, int] | None = None
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    summary_prompts: list[str] = Field(default_factory=list)
    summary_tags: list[list[str]] = Field(default_factory=list)
    summary_metadata: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tags = list(run_manager.tags) if run_manager else []
        if TAG_NOSTREAM in tags:
            self.summary_prompts.append(str(messages[-1].content))
            self.summary_tags.append(tags)
            self.summary_metadata.append(dict(run_manager.metadata) if run_manager else {})
            index = len(self.summary_prompts) - 1
            item = self.summaries[min(index, len(self.summaries) - 1)]
            if isinstance(item, BaseException):
                raise item
            text = item if isinstance(item, Verbatim) else as_summary(item)
            message = AIMessage(content=text, usage_metadata=self.summary_usage)
        else:
            self.calls.append(list(messages))
            item = self.replies[min(len(self.calls) - 1, len(self.replies) - 1)]
            if isinstance(item, BaseException):
                raise item
            message = item.model_copy()
        return ChatResult(generations=[ChatGeneration(message=message)])


class Handler:
    """The inner model call of a direct ``wrap_model_call``: records requests, answers or raises."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes) or [AIMessage(content="ok")]
        self.requests: list[ModelRequest] = []

    def _next(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        item = self.outcomes[min(len(self.requests) - 1, len(self.outcomes) - 1)]
        if isinstance(item, BaseException):
            raise item
        return ModelResponse(result=[item])

    def __call__(self, request: ModelRequest) -> ModelResponse:
        return self._next(request)

    async def acall(self, request: ModelRequest) -> ModelResponse:
        return self._next(request)

    @property
    def sent(self) -> list[BaseMessage]:
        return self.requests[-1].messages


def make_request(
    messages: list[BaseMessage],
    *,
    model: BaseChatModel | None = None,
    state: dict[str, Any] | None = None,
    events: list[dict] | None = None,
    system: str | None = SYSTEM,
    tools: list[Any] | None = None,
) -> ModelRequest:
    writer = events.append if events is not None else (lambda _payload: None)
    return ModelRequest(
        model=model or ScriptedChatModel(),
        messages=messages,
        system_message=SystemMessage(content=system) if system else None,
        tools=tools or [],
        state={"messages": messages, **(state or {})},
        runtime=SimpleNamespace(stream_writer=writer),  # type: ignore[arg-type]
    )


def tool_turn(index: int, *, name: str, content: str, args: dict | None = None) -> list[BaseMessage]:
    """An AIMessage calling ``name`` and its ToolMessage."""
    call_id = f"call_{index}"
    return [
        AIMessage(
            content="",
            tool_calls=[{"name": name, "args": args or {"q": index}, "id": call_id}],
            id=f"ai-{index}",
        ),
        ToolMessage(content=content, tool_call_id=call_id, name=name, id=f"tool-{index}"),
    ]


def conversation(turns: int, *, name: str = "web_search", size: int = 4000) -> list[BaseMessage]:
    """A human question, then ``turns`` tool turns with results of ``size`` characters, then a question."""
    messages: list[BaseMessage] = [HumanMessage(content="Research the topic please.", id="h-0")]
    for i in range(turns):
        body = f"BEGIN-{i} " + " ".join(f"word{j}" for j in range(size // 6)) + f" END-{i}"
        messages += tool_turn(i, name=name, content=body)
    messages.append(HumanMessage(content="Now summarize what you found.", id="h-last"))
    return messages


def statuses(events: list[dict]) -> list[str]:
    return [e["status"] for e in events if e.get("type") == "compression"]
