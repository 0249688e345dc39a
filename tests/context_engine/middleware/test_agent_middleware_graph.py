"""The two middlewares inside a real ``create_agent`` graph with an InMemorySaver: state updates,
custom-stream events, the nostream summary call, token usage, and the runtime's wiring."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.constants import TAG_NOSTREAM

from context_engine.config import CompressionConfig
from context_engine.formats import RECEIPT_HEADER
from context_engine.middleware import CompressionMiddleware, TokenUsageMiddleware
from context_engine.state import SESSION_ID_KEY, SUMMARY_EVENT_KEY
from context_engine.store import MemoryStore
from context_engine.tokens.calibration import Calibration
from context_engine.tokens.messages import ESTIMATOR_NAME, estimate_message, estimate_messages
from tests.context_engine.fakes import SYSTEM, ScriptedChatModel

SUMMARY_TEXT = "## SESSION INTENT\nSECRET-SUMMARY-TEXT"
USAGE = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}


@tool
def web_search(query: str) -> str:
    """Search the web."""
    return f"RESULTS for {query}: " + " ".join(f"item{j}" for j in range(900))


def _calls(n: int) -> list[AIMessage]:
    replies = [
        AIMessage(
            content="",
            tool_calls=[{"name": "web_search", "args": {"query": f"q{i}"}, "id": f"c{i}"}],
            usage_metadata=USAGE,
        )
        for i in range(n)
    ]
    return [*replies, AIMessage(content="All done.", usage_metadata=USAGE)]


def _agent(model, *, trigger: int, keep: int = 3, window: int = 64_000, store=None):
    config = CompressionConfig(
        trigger_tokens=trigger, keep_messages=keep, tool_result_token_limit=100, context_window=window
    )
    store = store if store is not None else MemoryStore()
    middleware = [
        CompressionMiddleware(config=config, store=store, summary_model=model),
        TokenUsageMiddleware(config=config),
    ]
    return create_agent(
        model, [web_search], system_prompt=SYSTEM, middleware=middleware, checkpointer=InMemorySaver()
    ), store


def _thread(name: str) -> dict:
    return {"configurable": {"thread_id": name}}


def _run(agent, text: str, config: dict) -> tuple[list, list]:
    messages, custom = [], []
    for mode, chunk in agent.stream(
        {"messages": [HumanMessage(text)]}, config, stream_mode=["messages", "custom"]
    ):
        (messages if mode == "messages" else custom).append(chunk)
    return messages, custom


def test_summary_in_a_graph_updates_private_state_and_never_streams():
    model = ScriptedChatModel(
        replies=_calls(6),
        summaries=[SUMMARY_TEXT],
        summary_usage={"input_tokens": 700, "output_tokens": 50, "total_tokens": 750},
    )
    agent, store = _agent(model, trigger=1500)
    streamed, events = _run(agent, "research please", _thread("t1"))
    assert len(model.summary_prompts) >= 1
    assert all(TAG_NOSTREAM in tags for tags in model.summary_tags)
    assert all(meta.get("lc_source") == "summarization" for meta in model.summary_metadata)
    streamed_text = "".join(str(chunk.content) for chunk, _meta in streamed)
    assert "SECRET-SUMMARY-TEXT" not in streamed_text and "All done." in streamed_text
    compression = [e for e in events if e.get("type") == "compression"]
    assert [e["status"] for e in compression][:2] == ["started", "completed"]
    assert any(e["level"] == "summary" and e["summary_usage"]["total_tokens"] == 750 for e in compression)

    values = agent.get_state(_thread("t1")).values
    event = values[SUMMARY_EVENT_KEY]
    assert "SECRET-SUMMARY-TEXT" in event["summary_message"].content
    assert values[SESSION_ID_KEY] and values["_summary_events"][0] is None
    # Nothing was deleted: all 6 raw tool results are still in state, uncompacted.
    tools = [m for m in values["messages"] if isinstance(m, ToolMessage)]
    assert len(tools) == 6 and all(RECEIPT_HEADER not in m.content for m in tools)
    usage = values["token_usage"]
    assert usage["summary_model_usage"]["total_tokens"] == 750 * len(model.summary_prompts)
    assert usage["summary_active"] is True and usage["summary_message_tokens"] > 0
    assert usage["thread"]["calls"] == 7  # provider usage of the agent's calls only
    # Private keys stay out of the graph output.
    output = agent.invoke({"messages": [HumanMessage("thanks")]}, _thread("t1"))
    assert SUMMARY_EVENT_KEY not in output


def test_the_model_sees_the_compacted_view_while_state_keeps_the_originals():
    model = ScriptedChatModel(replies=_calls(2))
    agent, store = _agent(model, trigger=1200, keep=50)
    agent.invoke({"messages": [HumanMessage("go")]}, _thread("t2"))
    last_call = model.calls[-1]
    receipts = [m for m in last_call if isinstance(m, ToolMessage)]
    assert receipts and all(RECEIPT_HEADER in m.content for m in receipts)
    assert model.summary_prompts == []
    values = agent.get_state(_thread("t2")).values
    assert SUMMARY_EVENT_KEY not in values
    assert all("item500" in m.content for m in values["messages"] if isinstance(m, ToolMessage))


def test_token_usage_fields_and_pressure_ratio():
    model = ScriptedChatModel(replies=[AIMessage(content="Hello there.", usage_metadata=USAGE)])
    agent, _ = _agent(model, trigger=2048, window=2000)
    agent.invoke({"messages": [HumanMessage("hi")]}, _thread("t3"))
    usage = agent.get_state(_thread("t3")).values["token_usage"]
    sent = model.calls[-1]
    profile = TokenUsageMiddleware(config=CompressionConfig(trigger_tokens=2048)).profile
    system, rest = sent[0], sent[1:]
    tools_tokens = usage["tools_tokens"]
    assert usage["system_tokens"] == estimate_message(system, profile)
    assert tools_tokens > 0
    estimated = estimate_messages(rest, system=system, tools=[web_search], profile=profile)
    assert usage["estimated_input_tokens"] == estimated
    # The provider reported 100 prompt tokens for it: the figures are corrected by that reading (one
    # reading moves the factor towards it by a bounded step, never outright: issue 24).
    calibration = Calibration().observe(estimated=estimated, reported=USAGE["input_tokens"])
    assert usage["calibration"] == {"factor": calibration.factor, "observations": 1}
    assert estimated < usage["llm_input_tokens"] == calibration.corrected(estimated) < USAGE["input_tokens"]
    reply = agent.get_state(_thread("t3")).values["messages"][-1]
    assert usage["estimated_next_llm_input_tokens"] == estimated + estimate_message(reply, profile)
    # The provider reported 100 prompt tokens for that call: the next request is anchored on them,
    # plus the (calibrated) estimate of what was added since (the reply).
    since = calibration.corrected(estimate_message(reply, profile))
    assert usage["pressure_basis"] == "reported" and usage["reported_input_tokens"] == 100
    assert usage["estimated_since_tokens"] == since
    assert usage["next_llm_input_tokens"] == 100 + since
    assert usage["summary_trigger_tokens"] == 2048
    assert usage["summary_pressure_ratio"] == round(usage["next_llm_input_tokens"] / 2048, 4)
    assert usage["context_window"] == 2000
    assert usage["context_usage_ratio"] == round(usage["llm_input_tokens"] / 2000, 4)
    assert usage["remaining_context_tokens"] == 2000 - usage["llm_input_tokens"]
    assert usage["summary_active"] is False and usage["summary_message_tokens"] == 0
    assert usage["estimator"] == ESTIMATOR_NAME and usage["measured_at"]
    assert usage["run"]["total_tokens"] == 110 and usage["run"]["calls"] == 1
    # A second run: run usage starts over, thread usage accumulates.
    agent.invoke({"messages": [HumanMessage("again")]}, _thread("t3"))
    usage = agent.get_state(_thread("t3")).values["token_usage"]
    assert (
        usage["run"]["calls"] == 1
        and usage["thread"]["calls"] == 2
        and usage["thread"]["total_tokens"] == 220
    )


async def test_async_graph_run_compacts_and_summarizes():
    model = ScriptedChatModel(replies=_calls(6), summaries=[SUMMARY_TEXT])
    agent, store = _agent(model, trigger=1500)
    events = []
    async for mode, chunk in agent.astream(
        {"messages": [HumanMessage("go")]}, _thread("t4"), stream_mode=["custom", "updates"]
    ):
        if mode == "custom":
            events.append(chunk)
    state = await agent.aget_state(_thread("t4"))
    assert SUMMARY_EVENT_KEY in state.values and any(e["level"] == "summary" for e in events)
    assert any(p.startswith("outputs/conversation_history/") for p in store.files)
