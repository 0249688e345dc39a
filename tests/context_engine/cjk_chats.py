"""The Chinese and English tool-calling chats of ``cjk_toolcall_chats`` as LangChain messages.

Real cl100k sizes of these threads are measured offline by ``bench/tokenizers.py`` (see
``test_agent_middleware_cjk.py``), since tiktoken is not a test dependency.
"""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from tests.conftest import SHARED_DATA

DATA = SHARED_DATA / "cjk_toolcall_chats"
FILES = {"zh": "glaive_toolcall_zh_demo.json", "en": "glaive_toolcall_en_demo.json"}


def thread(language: str, *, records: int) -> list[BaseMessage]:
    """The first ``records`` conversations of one file, concatenated into one long thread."""
    data = json.loads((DATA / FILES[language]).read_text(encoding="utf-8"))
    messages: list[BaseMessage] = []
    for r, record in enumerate(data[:records]):
        call_id = None
        for t, turn in enumerate(record["conversations"]):
            kind, value, mid = turn["from"], turn["value"], f"{language}-{r}-{t}"
            if kind == "human":
                messages.append(HumanMessage(content=value, id=mid))
            elif kind == "gpt":
                messages.append(AIMessage(content=value, id=mid))
            elif kind == "function_call":
                call = json.loads(value)
                call_id = f"call_{r}_{t}"
                args = call.get("arguments") or {}
                if isinstance(args, str):
                    args = json.loads(args)
                messages.append(
                    AIMessage(
                        content="", tool_calls=[{"name": call["name"], "args": args, "id": call_id}], id=mid
                    )
                )
            elif kind == "observation" and call_id:
                messages.append(ToolMessage(content=value, tool_call_id=call_id, id=mid))
                call_id = None
    return messages


def real_size(message: BaseMessage, count) -> int:
    """Tokens of one message in a chat prompt: content, tool-call names and JSON arguments, and a
    4-token frame (role and separators)."""
    total = count(str(message.content)) + 4
    for call in getattr(message, "tool_calls", None) or ():
        total += count(call["name"]) + count(json.dumps(call["args"], ensure_ascii=False))
    return total
