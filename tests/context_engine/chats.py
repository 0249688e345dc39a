"""Conversations as message lists, for the engine's tests and for the threads the service tests seed."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

DEFAULT_HEADINGS = (
    "## SESSION INTENT",
    "## USER REQUIREMENTS AND PREFERENCES",
    "## PROGRESS AND DECISIONS",
    "## ARTIFACTS AND REFERENCES",
    "## NEXT STEPS",
)


def as_summary(text: str) -> str:
    """``text`` made a valid summary under the default prompt: the headings it lacks are appended."""
    if not text.strip():  # nothing stays nothing: an empty answer is no summary
        return text
    missing = [heading for heading in DEFAULT_HEADINGS if heading not in text]
    return text + "".join(f"\n\n{heading}\nNone." for heading in missing)


SUMMARY = as_summary("## SESSION INTENT\nKeep the context small.")
USAGE = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}


def conversation_messages(turns: int, *, big_result_chars: int = 6000) -> list[BaseMessage]:
    """``turns`` question/tool-call/tool-result/answer rounds with stable ids and large tool results."""
    messages: list[BaseMessage] = []
    for n in range(turns):
        call_id = f"call_{n}"
        messages += [
            HumanMessage(content=f"Question {n}: what does document {n} say about compression?", id=f"h{n}"),
            AIMessage(
                content="",
                id=f"a{n}",
                tool_calls=[{"id": call_id, "name": "query_kb", "args": {"query": f"doc {n}"}}],
            ),
            ToolMessage(
                content=f"Result {n}: https://example.com/doc/{n} "
                + ("lorem ipsum dolor " * big_result_chars)[:big_result_chars],
                tool_call_id=call_id,
                name="query_kb",
                id=f"t{n}",
            ),
            AIMessage(content=f"Document {n} says compression keeps context small.", id=f"r{n}"),
        ]
    return messages
