"""The ``task`` tool: a sub-agent with the parent's model, workdir and middleware stack."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool, tool

from agent_platform.models import Agent
from agent_platform.workdir import Workdir


def final_answer(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls and message.text.strip():
            return message.text
    return "The sub-agent finished without an answer."


def build_task_tool(*, agent: Agent, conversation: Any, workdir: Workdir, model: BaseChatModel) -> BaseTool:
    @tool("task", parse_docstring=True)
    def task(description: str) -> str:
        """Delegate a self-contained task to a sub-agent with the same tools and files; returns its answer.

        Args:
            description: What the sub-agent should do, with every detail it needs.
        """
        from agent_platform.runtime.graph import build_agent_graph

        graph = build_agent_graph(
            agent=agent, conversation=conversation, model=model, workdir=workdir, subagent=True
        )
        result = graph.invoke({"messages": [HumanMessage(description)]})
        return final_answer(result.get("messages", []))

    return task
