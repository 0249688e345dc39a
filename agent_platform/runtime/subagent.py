"""What a sub-agent (the ``task`` tool) is: the tools it never gets, its prompt suffix, and its answer.
The tool itself is built with the graph, in ``runtime.graph``. A sub-agent's state dies with it, but
its summary calls are billed to the thread: it borrows the parent's spend-guard ledger
(``SharedLedger.lend``), counting the thread's calls and adding its own, which the parent writes to the
thread's state at its next model call."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

# Tools a sub-agent never gets: no recursion, and it cannot pause for the user inside a tool call.
SUBAGENT_EXCLUDED_TOOLS = frozenset({"task", "ask_user"})
SUBAGENT_PROMPT_SUFFIX = (
    "\n\nYou are a sub-agent working on one delegated task. Do it with your tools and reply with a "
    "complete, self-contained final answer: the caller only sees that answer."
)


def final_answer(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls and message.text.strip():
            return message.text
    return "The sub-agent finished without an answer."
