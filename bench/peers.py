"""The three middlewares under comparison, the fake models they share, and a direct hook driver.

* ``ours``: ``context_engine.middleware.CompressionMiddleware`` (``wrap_model_call``);
* ``langchain``: ``langchain.agents.middleware.SummarizationMiddleware`` (``before_model``; rewrites
  ``state["messages"]`` with ``REMOVE_ALL_MESSAGES``);
* ``deepagents``: ``deepagents.middleware.SummarizationMiddleware`` (``wrap_model_call``; keeps the raw
  log and a ``_summarization_event``), on a ``FilesystemBackend(root_dir=tmp, virtual_mode=True)``.

All three get the same trigger (tokens), the same keep setting (messages), the same summary prompt
and the same deterministic fake summarizer. The driver calls each middleware's hooks directly with a
``ModelRequest`` and carries their state updates forward through LangGraph's ``add_messages`` reducer,
which is what the agent graph does between nodes.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from pydantic import Field

from bench.tokenizers import count_cl100k
from context_engine.compaction.tool_results import tool_result_text
from context_engine.config import CompressionConfig
from context_engine.formats import DEFAULT_SUMMARY_PROMPT
from context_engine.store import MemoryStore
from context_engine.summary.validation import DEFAULT_HEADINGS

MIDDLEWARES = ("ours", "langchain", "deepagents")
SUMMARY_CHARS = 400
MODEL_NAME = "gpt-4o"  # picks our cl100k estimator profile; the peers count characters / 4
SYSTEM_PROMPT = (
    "You are a helpful agent on a self-hosted platform. Use the tools to complete the user's task. "
    "Large tool results and earlier history are saved in your workdir; read them back with read_file."
)


class RecordingModel(BaseChatModel):
    """The agent model: answers ``ok`` and records every request (system message first).

    Like a real provider it rejects a request above its window (``profile["max_input_tokens"]``,
    counted with cl100k) with ``ContextOverflowError``; rejected requests are counted, not recorded.
    """

    requests: list[list[BaseMessage]] = Field(default_factory=list)
    rejected: int = 0
    record: bool = True

    @property
    def _llm_type(self) -> str:
        return "bench-recording"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        if self.record:
            window = (self.profile or {}).get("max_input_tokens")
            if window and request_tokens(messages) > window:
                self.rejected += 1
                raise ContextOverflowError(f"This model's maximum context length is {window} tokens.")
            self.requests.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="ok"))])

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self


# --- counting requests with ONE reference tokenizer (cl100k) for all three --------------------------

_TOKENS: dict[str, int] = {}
MESSAGE_OVERHEAD = 4  # role and separators, as OpenAI's chat format spends
REPLY_OVERHEAD = 3


def message_text(message: BaseMessage) -> str:
    """The text a provider bills for: content (text blocks joined) plus JSON of the tool calls."""
    text = message.content if isinstance(message.content, str) else tool_result_text(message.content)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [{"name": c["name"], "arguments": c["args"]} for c in message.tool_calls]
        text += json.dumps(calls, ensure_ascii=False)
    return text


def _count(text: str) -> int:
    n = _TOKENS.get(text)
    if n is None:
        n = _TOKENS[text] = count_cl100k(text)
    return n


def request_tokens(messages: list[BaseMessage]) -> int:
    return REPLY_OVERHEAD + sum(_count(message_text(m)) + MESSAGE_OVERHEAD for m in messages)


class FakeSummarizer(BaseChatModel):
    """The shared summarizer: the first 400 characters of what follows ``<messages>`` in its prompt,
    under the five headings of the default summary prompt."""

    calls: int = 0
    prompt_chars: int = 0
    prompt_tokens: int = 0  # cl100k, what a provider would bill as the summary calls' input

    @property
    def _llm_type(self) -> str:
        return "bench-summarizer"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls += 1
        text = messages[-1].text if messages else ""
        self.prompt_chars += len(text)
        self.prompt_tokens += request_tokens(list(messages))
        body = text.split("<messages>", 1)[-1].strip()
        excerpt = body[:SUMMARY_CHARS] or "No previous conversation history."
        # Under the default prompt's headings, so ours accepts it as a summary (issue 24: only a summary
        # becomes memory); every middleware gets the same text.
        summary = "\n\n".join(
            f"{heading}\n{excerpt if i == 0 else 'None.'}" for i, heading in enumerate(DEFAULT_HEADINGS)
        )
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=summary))])


@dataclass
class Setup:
    trigger_tokens: int
    keep_messages: int
    context_window: int
    tool_result_token_limit: int = 300


@dataclass
class Harness:
    """One middleware instance plus what the driver needs to run and inspect it."""

    name: str
    middleware: Any
    summarizer: FakeSummarizer
    model: RecordingModel
    files: Callable[[], dict[str, str]]  # saved path -> text (workdir / backend), for recoverability
    state: dict[str, Any] = field(default_factory=lambda: {"messages": []})
    errors: list[str] = field(default_factory=list)
    cleanup: Callable[[], None] = lambda: None

    @property
    def is_before_model(self) -> bool:
        return self.name == "langchain"


RUNTIME = Runtime(context=None, store=None, stream_writer=lambda _chunk: None, previous=None)


def _profile(setup: Setup) -> dict[str, int]:
    return {"max_input_tokens": setup.context_window}


def _dir_files(root: Path) -> dict[str, str]:
    return {
        "/" + str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="surrogateescape")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def build(
    name: str,
    setup: Setup,
    *,
    record: bool = True,
    summarizer: FakeSummarizer | None = None,
    **config_overrides: Any,
) -> Harness:
    """One middleware on ``setup``; ``summarizer`` replaces the shared fake summarizer, and
    ``config_overrides`` set other fields of our ``CompressionConfig`` (ours only)."""
    summarizer = summarizer if summarizer is not None else FakeSummarizer(profile=_profile(setup))
    model = RecordingModel(profile=_profile(setup), record=record)
    if name == "ours":
        from context_engine.middleware import CompressionMiddleware

        store = MemoryStore()
        config = CompressionConfig(
            trigger_tokens=setup.trigger_tokens,
            keep_messages=setup.keep_messages,
            summary_prompt=DEFAULT_SUMMARY_PROMPT,
            tool_result_token_limit=setup.tool_result_token_limit,
            context_window=setup.context_window,
            model_name=MODEL_NAME,
            **config_overrides,
        )
        mw = CompressionMiddleware(config=config, store=store, summary_model=summarizer)
        return Harness(name, mw, summarizer, model, lambda: dict(store.files))
    if name == "langchain":
        from langchain.agents.middleware import SummarizationMiddleware

        mw = SummarizationMiddleware(
            model=summarizer,
            trigger=("tokens", setup.trigger_tokens),
            keep=("messages", setup.keep_messages),
            summary_prompt=DEFAULT_SUMMARY_PROMPT,
            trim_tokens_to_summarize=setup.context_window,
        )
        return Harness(name, mw, summarizer, model, dict)
    if name == "deepagents":
        from deepagents.backends import FilesystemBackend
        from deepagents.middleware import SummarizationMiddleware as DeepAgentsSummarization

        tmp = tempfile.TemporaryDirectory(prefix="bench-deepagents-")
        backend = FilesystemBackend(root_dir=tmp.name, virtual_mode=True)
        mw = DeepAgentsSummarization(
            model=summarizer,
            backend=backend,
            trigger=("tokens", setup.trigger_tokens),
            keep=("messages", setup.keep_messages),
            summary_prompt=DEFAULT_SUMMARY_PROMPT,
            # P7: the constructor default (4000) turns one large old tool result into "too long to summarize";
            # the summarizer gets what fits the same window as ours.
            trim_tokens_to_summarize=setup.context_window,
        )
        root = Path(tmp.name)
        return Harness(name, mw, summarizer, model, lambda: _dir_files(root), cleanup=tmp.cleanup)
    raise ValueError(name)


def _handler(request):
    from langchain.agents.middleware import ModelResponse

    sent = [request.system_message, *request.messages] if request.system_message else list(request.messages)
    reply = request.model.invoke(sent)
    return ModelResponse(result=[reply])


def _apply(state: dict[str, Any], update: dict[str, Any] | None) -> None:
    for key, value in (update or {}).items():
        state[key] = add_messages(state["messages"], value) if key == "messages" else value


def model_call(h: Harness, *, tools: list | None = None, handler=_handler) -> None:
    """One model call through ``h``'s middleware, with its state updates applied to ``h.state``."""
    from langchain.agents.middleware import ExtendedModelResponse, ModelRequest

    state = h.state
    try:
        if h.is_before_model:
            _apply(state, h.middleware.before_model(state, RUNTIME))
        request = ModelRequest(
            model=h.model,
            messages=state["messages"],
            system_message=SystemMessage(content=SYSTEM_PROMPT),
            tools=tools or [],
            state=state,
            runtime=RUNTIME,
        )
        if h.is_before_model:
            handler(request)
            return
        result = h.middleware.wrap_model_call(request, handler)
        if isinstance(result, ExtendedModelResponse) and result.command is not None:
            _apply(state, result.command.update)
    except Exception as exc:  # a peer giving up on a request is a result, not a crash of the benchmark
        h.errors.append(f"{type(exc).__name__}: {exc}"[:200])
