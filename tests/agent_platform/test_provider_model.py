"""The provider chat model sends exactly the request body ``ChatOpenAI`` sends (bytes, key order
included), without the SDK's typed walk of every message."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from agent_platform.runtime.provider_model import ProviderChatModel

PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
MESSAGES = [
    SystemMessage("You are terse."),
    HumanMessage(
        [{"type": "text", "text": "What is in it?"}, {"type": "image_url", "image_url": {"url": PIXEL}}]
    ),
    AIMessage("", tool_calls=[{"id": "call_1", "name": "lookup", "args": {"q": "pixel", "n": 2}}]),
    ToolMessage("one white pixel \u00e9\u4e2d", tool_call_id="call_1", name="lookup"),
    HumanMessage("Thanks. And now?"),
]


@tool
def lookup(q: str, n: int = 1) -> str:
    """Look something up.

    Args:
        q: What to look up.
        n: How many results.
    """
    return q


def _bodies(stub, model_class, *, stream: bool) -> list[str]:
    stub.reply("A short answer.")
    model = model_class(
        model="gpt-4o-mini", base_url=stub.base_url, api_key="sk-test", max_retries=0, stream_usage=True
    ).bind_tools([lookup])
    before = len(stub.requests)
    if stream:
        assert "".join(str(chunk.content) for chunk in model.stream(MESSAGES)) == "A short answer."
    else:
        assert model.invoke(MESSAGES).content == "A short answer."
    return [json.dumps(body) for body in stub.requests[before:]]


def test_the_request_body_is_chat_openais_streamed_or_not(openai_stub):
    for stream in (True, False):
        ours = _bodies(openai_stub, ProviderChatModel, stream=stream)
        theirs = _bodies(openai_stub, ChatOpenAI, stream=stream)
        assert ours == theirs and len(ours) == 1
        assert json.loads(ours[0])["messages"][3]["content"] == "one white pixel \u00e9\u4e2d"


def test_the_sdk_never_walks_the_messages(openai_stub, monkeypatch):
    import openai.resources.chat.completions.completions as completions

    walked: list[int] = []
    transform = completions.maybe_transform

    def counting(data, expected_type):
        walked.append(len(data.get("messages") or []) if isinstance(data, dict) else 0)
        return transform(data, expected_type)

    monkeypatch.setattr(completions, "maybe_transform", counting)
    _bodies(openai_stub, ProviderChatModel, stream=True)
    assert walked == [0]
    _bodies(openai_stub, ChatOpenAI, stream=True)
    assert walked == [0, len(MESSAGES)]  # the check itself sees what it counts
