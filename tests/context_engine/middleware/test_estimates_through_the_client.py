"""Issue 24, invariant 7, through the real ``ChatOpenAI`` and the local OpenAI-protocol stub: an agent on
an Ollama-tagged Qwen model (``qwen2.5:7b``) sends a run of one ideograph; our estimate of the request is
not far below the prompt tokens the server reports for it (one per ideograph, as Qwen's tokenizer
counts such a run, plus the request's framing)."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from context_engine.config import CompressionConfig
from context_engine.middleware import CompressionMiddleware, TokenUsageMiddleware
from context_engine.store import MemoryStore
from tests.context_engine.fakes import SYSTEM
from tests.support.openai_stub import OpenAIStub

MODEL = "qwen2.5:7b"
FRAMING = 60  # the system prompt and the chat template's role markers, as the server counts them


def _server_count(body: dict) -> int:
    return sum(str(m.get("content") or "").count("中") for m in body["messages"]) + FRAMING


def test_a_cjk_run_under_an_ollama_tag_is_estimated_near_the_servers_count():
    stub = OpenAIStub(model=MODEL, prompt_tokens=_server_count).start()
    try:
        stub.reply("好的。")
        model = ChatOpenAI(model=MODEL, base_url=stub.base_url, api_key="sk-test", max_retries=0, timeout=10)
        config = CompressionConfig(
            trigger_tokens=1_000_000, keep_messages=4, tool_result_token_limit=100_000, model_name=MODEL
        )
        usage_middleware = TokenUsageMiddleware(config=config)
        middleware = [
            CompressionMiddleware(config=config, store=MemoryStore(), summary_model=model),
            usage_middleware,
        ]
        agent = create_agent(
            model, [], system_prompt=SYSTEM, middleware=middleware, checkpointer=InMemorySaver()
        )
        thread = {"configurable": {"thread_id": "cjk"}}
        agent.invoke({"messages": [HumanMessage("中" * 3000)]}, thread)
        usage = agent.get_state(thread).values["token_usage"]
    finally:
        stub.stop()
    assert usage_middleware.profile.name == "qwen"  # the tag did not hide the family
    reported = usage["reported_input_tokens"]
    assert reported == 3000 + FRAMING
    assert usage["estimated_input_tokens"] >= 0.9 * reported
