"""Stored estimates and calibration through the middleware stack in a real agent graph (issue 16)."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from context_engine.config import CompressionConfig
from context_engine.middleware import CompressionMiddleware, TokenUsageMiddleware
from context_engine.store import MemoryStore
from context_engine.tokens.calibration import Calibration, CalibrationMemory
from context_engine.tokens.messages import ESTIMATE_KEY, ESTIMATOR_NAME, estimate_messages, profile_for_model
from tests.context_engine.fakes import SYSTEM, ScriptedChatModel


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"Found for {query}: " + " ".join(f"record-{j}" for j in range(400))


def _stack(model, *, trigger: int, calibration: CalibrationMemory):
    config = CompressionConfig(trigger_tokens=trigger, keep_messages=2, tool_result_token_limit=100)
    middleware = [
        CompressionMiddleware(
            config=config, store=MemoryStore(), summary_model=model, calibration=calibration
        ),
        TokenUsageMiddleware(config=config, calibration=calibration),
    ]
    return create_agent(
        model, [lookup], system_prompt=SYSTEM, middleware=middleware, checkpointer=InMemorySaver()
    )


def _events(agent, text: str, thread: str) -> list[dict]:
    config = {"configurable": {"thread_id": thread}}
    return [
        chunk
        for mode, chunk in agent.stream({"messages": [HumanMessage(text)]}, config, stream_mode=["custom"])
        if mode == "custom"
    ]


def test_replies_and_tool_results_enter_the_state_with_their_estimates():
    model = ScriptedChatModel(
        replies=[
            AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"query": "q"}, "id": "c1"}]),
            AIMessage(content="Here is what I found."),
        ]
    )
    agent = _stack(model, trigger=1_000_000, calibration=CalibrationMemory())
    agent.invoke({"messages": [HumanMessage("find q")]}, {"configurable": {"thread_id": "s1"}})
    messages = agent.get_state({"configurable": {"thread_id": "s1"}}).values["messages"]
    human, call, result, answer = messages
    profile = profile_for_model(None)
    for message in (call, result, answer):
        record = message.response_metadata[ESTIMATE_KEY]
        assert record["profile"] == profile.name and record["estimator"] == ESTIMATOR_NAME
    assert result.response_metadata[ESTIMATE_KEY]["text"] > 400  # the tool output's own estimate
    assert result.content.startswith("Found for q")  # the state keeps the output itself


def test_trigger_decisions_use_the_corrected_estimate():
    def run(calibration: CalibrationMemory) -> list[dict]:
        model = ScriptedChatModel(
            replies=[
                AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"query": "a"}, "id": "c1"}]),
                AIMessage(content="Done."),
            ]
        )
        return _events(_stack(model, trigger=1500, calibration=calibration), "go", "t")

    # Uncorrected, the second request (with the ~1,900-token tool output) is above the trigger.
    assert [e["status"] for e in run(CalibrationMemory())] == ["started", "completed"]
    # The model counts half of what we estimate: the same request is below it, nothing compacts.
    assert run(CalibrationMemory(Calibration(0.5, 40))) == []


class ReportingModel(ScriptedChatModel):
    """Reports as prompt tokens 70% of our estimate of each request (tool schemas included)."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        result = super()._generate(messages, stop, run_manager, **kwargs)
        system, rest = messages[0], messages[1:]
        estimate = estimate_messages(rest, system=system, tools=[lookup], profile=profile_for_model(None))
        reported = int(estimate * 0.7)
        result.generations[0].message.usage_metadata = {
            "input_tokens": reported,
            "output_tokens": 5,
            "total_tokens": reported + 5,
        }
        return result


def test_reported_usage_calibrates_within_the_run():
    calls = [
        AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"query": f"q{i}"}, "id": f"c{i}"}])
        for i in range(8)
    ]
    model = ReportingModel(replies=[*calls, AIMessage(content="Done.")])
    calibration = CalibrationMemory()
    agent = _stack(model, trigger=1_000_000, calibration=calibration)
    agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "c"}})
    usage = agent.get_state({"configurable": {"thread_id": "c"}}).values["token_usage"]
    # Each reading moves the factor a bounded step (issue 24): nine agreeing ones bring it there.
    assert calibration.current().observations == 9
    assert abs(calibration.current().factor - 0.7) < 0.01
    assert usage["calibration"] == calibration.current().as_dict()
    assert usage["llm_input_tokens"] == calibration.current().corrected(usage["estimated_input_tokens"])
    reported = usage["last_call_usage"]["input_tokens"]
    assert abs(usage["llm_input_tokens"] - reported) <= 0.01 * reported  # within 1% of what was reported
