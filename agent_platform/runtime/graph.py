"""Graph assembly, in one place: an Agent's admin configuration plus a thread give a compiled agent.

The middleware stack has named slots (``agent_middleware``); the model, tools, system prompt and
checkpointer come from the agent and the thread. A sub-agent (``task``) shares its parent thread's
spend-guard ledger: the parent's graph holds one ``SharedLedger`` and lends it to every sub-agent it
starts (``context_engine.summary.spend_guard`` says how its calls reach the thread's state).
"""

from __future__ import annotations

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
from agent_platform.runtime.state_repository import AgentStateRepository
from agent_platform.runtime.stopping import StopWaitingToolsMiddleware
from agent_platform.runtime.subagent import SUBAGENT_EXCLUDED_TOOLS, SUBAGENT_PROMPT_SUFFIX, final_answer
from agent_platform.tools import build_tools
from agent_platform.workdir import Workdir, workdir_for
from context_engine.lru import LRU
from context_engine.summary.spend_guard import LedgerSource, SharedLedger
from context_engine.tokens.calibration import CalibrationSource

RECURSION_LIMIT = 50
_SHARED_CHECKPOINTER = object()
STATE_GRAPH_CACHE_SIZE = 64
_state_graphs = LRU(STATE_GRAPH_CACHE_SIZE)


def thread_config(conversation: Any, **configurable: Any) -> dict[str, Any]:
    """The LangGraph config of a thread: its checkpoint lives under ``Conversation.thread_id``."""
    return {
        "configurable": {"thread_id": str(conversation.thread_id), **configurable},
        "recursion_limit": RECURSION_LIMIT,
    }


def agent_middleware(
    *,
    agent: Agent,
    conversation: Any,
    workdir: Workdir,
    model: BaseChatModel,
    calibration: CalibrationSource | None = None,
    ledger: LedgerSource | None = None,
) -> list[AgentMiddleware]:
    """The agent's middleware stack, outermost first. Named slots, filled by the compression work:

    1. compression: ``context_engine.middleware.compression_middleware_for(agent=..., conversation=...,
       workdir=..., model=...)`` (automatic compaction and summaries, SPEC 6);
    2. token usage: ``context_engine.middleware.token_usage_middleware_for(agent=..., model=...)``
       (pressure figures in state ``token_usage``, SPEC 7), inside compression so it measures what the
       model is actually sent;
    3. stop: ``StopWaitingToolsMiddleware`` lets Stop end a tool call that waits (``stopping``).

    Both share ``calibration``, the model's correction learned from reported usage (by default the
    process's one for the agent's endpoint and model, read from the table). ``ledger`` keeps the
    thread's spend-guard ledger (default: the agent's own state). Sub-agents get a stack of their own
    built here too (same files, calibration and ledger as the parent).
    """
    if calibration is None:
        calibration = calibration_source_for(agent=agent)
    return [
        compression_middleware_for(
            agent=agent,
            conversation=conversation,
            workdir=workdir,
            model=model,
            calibration=calibration,
            ledger=ledger,
        ),
        token_usage_middleware_for(agent=agent, model=model, calibration=calibration),
        StopWaitingToolsMiddleware(),
    ]


def build_agent_graph(
    *,
    agent: Agent,
    conversation: Any,
    checkpointer: Any = _SHARED_CHECKPOINTER,
    model: BaseChatModel | None = None,
    subagent: bool = False,
    workdir: Workdir | None = None,
    tools: list[BaseTool] | None = None,
    calibration: CalibrationSource | None = None,
    ledger: LedgerSource | None = None,
) -> CompiledStateGraph:
    """A compiled ``create_agent`` graph for ``agent`` on ``conversation``'s thread.

    ``checkpointer`` defaults to the process's thread checkpointer (sub-agents: none, they keep no
    state). ``model`` defaults to the agent's configured chat model; ``tools`` to the agent's enabled
    tools plus ``task``. Sub-agents share the parent's workdir and get the same middleware stack;
    ``ledger`` is the one a sub-agent borrows from its parent (a parent gets a new ``SharedLedger``).
    """
    if checkpointer is _SHARED_CHECKPOINTER:
        checkpointer = False if subagent else checkpointer_get()
    model = model if model is not None else chat_models.chat_model_for(agent)
    workdir = workdir if workdir is not None else workdir_for(conversation)
    # Read from the table here, where the graph is built: a sub-agent (built inside a tool call, on
    # a graph thread) gets its parent's instead.
    calibration = calibration if calibration is not None else calibration_source_for(agent=agent)
    if ledger is None and not subagent:
        ledger = SharedLedger()
    if tools is None:
        tools = agent_tools(
            agent=agent,
            conversation=conversation,
            workdir=workdir,
            model=model,
            subagent=subagent,
            calibration=calibration,
            ledger=ledger,
        )
    system_prompt = (agent.system_prompt or "") + (SUBAGENT_PROMPT_SUFFIX if subagent else "")
    return create_agent(
        model,
        tools,
        system_prompt=system_prompt.strip() or None,
        middleware=agent_middleware(
            agent=agent,
            conversation=conversation,
            workdir=workdir,
            model=model,
            calibration=calibration,
            ledger=ledger,
        ),
        checkpointer=checkpointer,
        name=f"{agent.slug}-subagent" if subagent else agent.slug,
    )


def agent_tools(
    *,
    agent: Agent,
    conversation: Any,
    workdir: Workdir,
    model: BaseChatModel,
    subagent: bool = False,
    calibration: CalibrationSource | None = None,
    ledger: LedgerSource | None = None,
) -> list[BaseTool]:
    tools = build_tools(agent=agent, conversation=conversation, workdir=workdir)
    if subagent:
        return [tool for tool in tools if tool.name not in SUBAGENT_EXCLUDED_TOOLS]
    if "task" in (agent.tools or []):
        tools.append(
            build_task_tool(
                agent=agent,
                conversation=conversation,
                workdir=workdir,
                model=model,
                calibration=calibration,
                ledger=ledger if isinstance(ledger, SharedLedger) else None,
            )
        )
    return tools


def build_task_tool(
    *,
    agent: Agent,
    conversation: Any,
    workdir: Workdir,
    model: BaseChatModel,
    calibration: CalibrationSource | None = None,
    ledger: SharedLedger | None = None,
) -> BaseTool:
    """The ``task`` tool: a sub-agent with the parent's model, workdir and middleware stack, whose
    summary calls count in the parent thread's ``ledger``."""

    @tool("task", parse_docstring=True)
    def task(description: str) -> str:
        """Delegate a self-contained task to a sub-agent with the same tools and files; returns its answer.

        Args:
            description: What the sub-agent should do, with every detail it needs.
        """
        graph = build_agent_graph(
            agent=agent,
            conversation=conversation,
            model=model,
            workdir=workdir,
            subagent=True,
            calibration=calibration,
            ledger=ledger.lend() if ledger is not None else None,
        )
        result = graph.invoke({"messages": [HumanMessage(description)]})
        return final_answer(result.get("messages", []))

    return task


def state_graph_for(conversation: Any) -> CompiledStateGraph:
    """The thread's graph for reading or writing its checkpoint: same state schema, no model calls.

    The offline model stands in for the agent's own, so reading state never needs an API key.
    Compiling costs ~10 ms and pages read state on every live event, so recent graphs are reused
    while the agent's configuration and the process's checkpointer are unchanged.
    """
    agent = conversation.agent
    checkpointer = checkpointer_get()
    key = (conversation.pk, agent.pk, agent.updated_at, id(checkpointer))
    graph = _state_graphs.get(key)
    if graph is None:
        graph = build_agent_graph(
            agent=agent, conversation=conversation, model=OfflineChatModel(), checkpointer=checkpointer
        )
        _state_graphs.put(key, graph)
    return graph


def state_repository_for(conversation: Any) -> AgentStateRepository:
    """The thread's checkpointed agent state, through its state graph."""
    return AgentStateRepository(state_graph_for(conversation), conversation.thread_id)
