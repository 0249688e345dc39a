"""The ``ask_user`` tool: pauses the run with a LangGraph interrupt until the user answers."""

from __future__ import annotations

from langchain_core.tools import BaseTool, tool
from langgraph.types import interrupt


def answer_text(value: object) -> str:
    """The user's answer from a resume value: a string, or a dict with an ``answer`` key."""
    if isinstance(value, dict) and "answer" in value:
        value = value["answer"]
    return value if isinstance(value, str) else str(value)


def ask_user_answer(question: str) -> str:
    return answer_text(interrupt({"question": question}))


def build_ask_user_tool() -> BaseTool:
    @tool("ask_user", parse_docstring=True)
    def ask_user(question: str) -> str:
        """Ask the user a question and wait for the answer. Use it when you need a decision or a fact
        only the user has.

        Args:
            question: The question, in the user's language.
        """
        return ask_user_answer(question)

    return ask_user
