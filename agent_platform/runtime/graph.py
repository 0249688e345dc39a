"""Graph assembly, in one place: an Agent's admin configuration gives a compiled agent, built once per
configuration and shared by every thread and run of the process.

The middleware stack has named slots (``agent_middleware``); the model, tools, system prompt and
checkpointer come from the agent. Nothing of a thread is closed over: a run brings its thread's
workdir and spend-guard ledger in its config (``run_scope``; ``thread_config`` puts them there), and
the tools and middleware read them per call. A sub-agent (``task``) runs the agent's sub-agent graph
with its parent's workdir and a loan of its parent's ``SharedLedger``
(``context_engine.summary.spend_guard`` says how its calls reach the thread's state).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph.state import CompiledStateGraph

from agent_platform.calibration.services import calibration_source_for
from agent_platform.models import Agent
from agent_platform.runtime import models as chat_models
from agent_platform.runtime.checkpointer import checkpointer_get
from agent_platform.runtime.middleware import compression_middleware_for, token_usage_middleware_for
from agent_platform.runtime.offline import OfflineChatModel
from agent_platform.runtime.run_scope import (
    RUN_SCOPE_CONFIG_KEY,
    RunLedger,
    RunScope,
    RunWorkdir,
    current_run_scope,
    run_scope_for,
)
from agent_platform.runtime.state_repository import AgentStateRepository
from agent_platform.runtime.stopping import ToolBudgetMiddleware
from agent_platform.runtime.subagent import SUBAGENT_EXCLUDED_TOOLS, SUBAGENT_PROMPT_SUFFIX, final_answer
from agent_platform.threads import AgentThread
from agent_platform.tools import build_tools, tools_unavailable
from context_engine.lru import LRU
from context_engine.tokens.calibration import CalibrationSource

RECURSION_LIMIT = 50
_SHARED_CHECKPOINTER = object()
GRAPH_CACHE_SIZE = 64
_graphs = LRU(GRAPH_CACHE_SIZE)
_build_lock = threading.Lock()


def thread_config(
    conversation: AgentThread, *, scope: RunScope | None = None, **configurable: Any
) -> dict[str, Any]:
    """The LangGraph config of a run on a thread: its checkpoint lives under ``Conversation.thread_id``;
    ``scope`` (by default a new one: the thread's workdir, a new ledger) is what the shared graph's
    tools and middleware read for this run."""
    return {
        "configurable": {
            "thread_id": str(conversation.thread_id),
            RUN_SCOPE_CONFIG_KEY: scope if scope is not None else run_scope_for(conversation),
            **configurable,
        },
        "recursion_limit": RECURSION_LIMIT,
    }


def agent_middleware(
    *,
    agent: Agent,
    model: BaseChatModel,
    calibration: CalibrationSource | None = None,
) -> list[AgentMiddleware]:
    """The agent's middleware stack, outermost first. Named slots, filled by the compression work:

    1. compression: ``context_engine.middleware.compression_middleware_for(agent=..., workdir=...,
       model=...)`` (automatic compaction and summaries, SPEC 6), on the run's workdir and ledger;
    2. token usage: ``context_engine.middleware.token_usage_middleware_for(agent=..., calibration=...)``
       (pressure figures in state ``token_usage``, SPEC 7), inside compression so it measures what the
       model is actually sent;
    3. tool budgets: ``ToolBudgetMiddleware`` gives every tool call its wall time, Stop and answer size
       (``stopping``).

    Both share ``calibration``, the model's correction learned from reported usage (by default the
    process's one for the agent's endpoint and model, read from the table). Sub-agents get a stack of
    their own built here too (same files, calibration and thread ledger as the parent).
    """
    if calibration is None:
        calibration = calibration_source_for(agent=agent)
    return [
        compression_middleware_for(
            agent=agent, workdir=RunWorkdir(), model=model, calibration=calibration, ledger=RunLedger()
        ),
        token_usage_middleware_for(agent=agent, calibration=calibration),
        ToolBudgetMiddleware(),
    ]


def build_agent_graph(
    *,
    agent: Agent,
    checkpointer: Any = _SHARED_CHECKPOINTER,
    model: BaseChatModel | None = None,
    subagent: bool = False,
    tools: list[BaseTool] | None = None,
    calibration: CalibrationSource | None = None,
) -> CompiledStateGraph:
    """A new compiled ``create_agent`` graph for ``agent``, serving any of its threads: a run passes
    ``thread_config(conversation)`` (its thread and ``RunScope``). ``agent_graph_for`` reuses one.

    ``checkpointer`` defaults to the process's thread checkpointer (sub-agents: none, they keep no
    state). ``model`` defaults to the agent's configured chat model; ``tools`` to the agent's enabled
    tools plus ``task``. Sub-agents get the same middleware stack.
    """
    if checkpointer is _SHARED_CHECKPOINTER:
        checkpointer = False if subagent else checkpointer_get()
    model = model if model is not None else chat_models.chat_model_for(agent)
    calibration = calibration if calibration is not None else calibration_source_for(agent=agent)
    if tools is None:
        tools = agent_tools(agent=agent, model=model, subagent=subagent, calibration=calibration)
    system_prompt = (agent.system_prompt or "") + (SUBAGENT_PROMPT_SUFFIX if subagent else "")
    return create_agent(
        model,
        tools,
        system_prompt=system_prompt.strip() or None,
        middleware=agent_middleware(agent=agent, model=model, calibration=calibration),
        checkpointer=checkpointer,
        name=f"{agent.slug}-subagent" if subagent else agent.slug,
    )


def _configuration_version(agent: Agent) -> tuple[Any, ...]:
    """What a compiled graph of ``agent`` depends on besides the process: the agent's and its
    endpoint's saved versions, and which of its tools can work here (a search provider, a knowledge
    base with documents)."""
    endpoint = agent.endpoint
    return (
        agent.pk,
        agent.updated_at,
        endpoint.pk if endpoint is not None else None,
        endpoint.updated_at if endpoint is not None else None,
        frozenset(tools_unavailable(agent.tools or [])),
    )


def agent_graph_for(agent: Agent, *, language: str = "") -> CompiledStateGraph:
    """The agent's compiled graph with the process's checkpointer, shared by all its threads and runs
    in ``language`` (the page's, which the offline model answers in: ``model_in_language``) while its
    configuration (``_configuration_version``), the chat-model factory, the checkpointer and the
    calibration object are unchanged. The calibration is read from the table on every call, as when a
    graph was built per run."""
    calibration = calibration_source_for(agent=agent)
    checkpointer = checkpointer_get()
    key = (
        "agent",
        chat_models.chat_model_for,
        *_configuration_version(agent),
        id(checkpointer),
        id(calibration),
        # Only the offline model (an agent with no endpoint) answers in the page's language: a provider's
        # agent keeps one graph for every language.
        language if agent.endpoint_id is None else "",
    )

    def build() -> CompiledStateGraph:
        model = chat_models.model_in_language(chat_models.chat_model_for(agent), language=language)
        return build_agent_graph(agent=agent, checkpointer=checkpointer, calibration=calibration, model=model)

    return _cached(key, build)


def _cached(key: tuple[Any, ...], build: Callable[[], CompiledStateGraph]) -> CompiledStateGraph:
    """The graph under ``key``, built once: runs that start together wait for the first one's build."""
    graph = _graphs.get(key)
    if graph is None:
        with _build_lock:
            graph = _graphs.get(key)
            if graph is None:
                graph = build()
                _graphs.put(key, graph)
    return graph


def agent_graphs_clear() -> None:
    _graphs.clear()


def agent_tools(
    *,
    agent: Agent,
    model: BaseChatModel,
    subagent: bool = False,
    calibration: CalibrationSource | None = None,
) -> list[BaseTool]:
    """The agent's tools on the run's workdir (``RunWorkdir``), plus ``task`` unless ``subagent``."""
    tools = build_tools(agent=agent, workdir=RunWorkdir())
    if subagent:
        return [tool for tool in tools if tool.name not in SUBAGENT_EXCLUDED_TOOLS]
    if "task" in (agent.tools or []):
        tools.append(build_task_tool(agent=agent, model=model, calibration=calibration))
    return tools


def build_task_tool(
    *, agent: Agent, model: BaseChatModel, calibration: CalibrationSource | None = None
) -> BaseTool:
    """The ``task`` tool: a sub-agent with the parent's model and middleware stack, on the calling
    run's workdir, whose summary calls count in that run's thread ledger (``RunScope.for_subagent``).
    The sub-agent graph is built at the first call and shared from then on, as its parent's is."""
    built: list[CompiledStateGraph] = []

    @tool("task", parse_docstring=True)
    def task(description: str) -> str:
        """Delegate a self-contained task to a sub-agent with the same tools and files; returns its answer.

        Args:
            description: What the sub-agent should do, with every detail it needs.
        """
        if not built:  # two first calls at once may both build: either graph serves
            built.append(build_agent_graph(agent=agent, model=model, subagent=True, calibration=calibration))
        scope = current_run_scope()
        config = {"configurable": {RUN_SCOPE_CONFIG_KEY: scope.for_subagent()}} if scope else None
        result = built[0].invoke({"messages": [HumanMessage(description)]}, config)
        return final_answer(result.get("messages", []))

    return task


def state_graph_for(conversation: AgentThread) -> CompiledStateGraph:
    """The thread's graph for reading or writing its checkpoint: same state schema, no model calls.

    The offline model stands in for the agent's own, so reading state never needs an API key.
    Compiling costs ~10 ms and pages read state on every live event, so one graph per agent is
    reused while the agent's configuration and the process's checkpointer are unchanged.
    """
    agent = conversation.agent
    checkpointer = checkpointer_get()
    key = ("state", agent.pk, agent.updated_at, id(checkpointer))
    return _cached(
        key, lambda: build_agent_graph(agent=agent, model=OfflineChatModel(), checkpointer=checkpointer)
    )


def state_repository_for(conversation: AgentThread) -> AgentStateRepository:
    """The thread's checkpointed agent state, through its state graph."""
    return AgentStateRepository(state_graph_for(conversation), conversation.thread_id)
