"""Issue 24, invariants 1 and 3, against the real ``ChatOpenAI`` client and the OpenAI-protocol stub:
a calibration that says the request is small does not send it over the window by our own estimate;
a summary call the provider failed (and billed) enters the thread's ledger."""

from __future__ import annotations

from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from context_engine.config import CompressionConfig, SpendLimits
from context_engine.middleware import CompressionMiddleware, TokenUsageMiddleware
from context_engine.state import SUMMARY_CALLS_KEY
from context_engine.store import MemoryStore
from context_engine.tokens.calibration import Calibration, CalibrationMemory
from tests.context_engine.chats import as_summary
from tests.context_engine.fakes import SYSTEM, conversation
from tests.context_engine.middleware.support import stub_chat

WINDOW = 16_384


def _agent(stub, config: CompressionConfig, calibration: CalibrationMemory):
    model = stub_chat(stub)
    middleware = [
        CompressionMiddleware(
            config=config, store=MemoryStore(), summary_model=model, calibration=calibration
        ),
        TokenUsageMiddleware(config=config, calibration=calibration),
    ]
    return create_agent(model, [], system_prompt=SYSTEM, middleware=middleware, checkpointer=InMemorySaver())


def test_a_request_over_the_window_by_our_estimate_is_compressed_though_calibration_says_it_is_small(
    openai_stub,
):
    # Many agreeing readings of a misreporting proxy taught x0.5: the request looks half its size.
    calibration = CalibrationMemory(Calibration(0.5, 40))
    config = CompressionConfig(
        trigger_tokens=int(WINDOW * 0.9),
        keep_messages=2,
        tool_result_token_limit=100_000,
        context_window=WINDOW,
    )
    openai_stub.reply(as_summary("## SESSION INTENT\nresearch")).reply("Answer.")
    agent = _agent(openai_stub, config, calibration)
    thread = {"configurable": {"thread_id": "window"}}
    agent.invoke({"messages": conversation(8, size=3_000)}, thread)

    summary_call, sent = openai_stub.requests
    assert "<messages>" in summary_call["messages"][-1]["content"]
    assert sent["messages"][1]["content"].startswith("You are in the middle of a conversation that has been")
    usage = agent.get_state(thread).values["token_usage"]
    assert usage["estimated_input_tokens"] < WINDOW  # our own raw estimate of what went out


def test_a_failed_summary_call_enters_the_threads_ledger(openai_stub):
    config = CompressionConfig(
        trigger_tokens=1_000,
        keep_messages=2,
        tool_result_token_limit=100_000,
        context_window=None,
        spend=SpendLimits(max_calls_per_hour=10),
    )
    openai_stub.error(500, {"error": {"message": "upstream failed", "type": "server_error"}}).reply("Answer.")
    agent = _agent(openai_stub, config, CalibrationMemory())
    thread = {"configurable": {"thread_id": "billed"}}
    agent.invoke({"messages": conversation(6)}, thread)

    assert len(openai_stub.requests) == 2  # the failed summary, then the compacted view
    values = agent.get_state(thread).values
    assert values["messages"][-1].content == "Answer."
    assert len(values[SUMMARY_CALLS_KEY]) == 1
    assert values.get("_summarization_event") is None  # nothing else changed
