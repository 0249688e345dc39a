"""Issue 24, invariant 5, end to end: the real ``ChatOpenAI`` against the local OpenAI-protocol stub, which
answers the first call with a provider's real overflow (status and body, a JSON list for Gemini); the
compression middleware summarizes and the retry succeeds. Look-alikes (rate limits, auth, other bad
requests) propagate without a compression."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_engine.state import SUMMARY_EVENT_KEY
from context_engine.store import MemoryStore
from tests.context_engine.chats import as_summary
from tests.context_engine.fakes import conversation
from tests.context_engine.middleware.support import stub_agent, stub_chat
from tests.context_engine.policy.provider_errors import NOT_OVERFLOW_BODIES, OVERFLOW_BODIES
from tests.support.openai_stub import OpenAIStub

SUMMARY = as_summary("## SESSION INTENT\nresearch")


def _run(agent, thread: str):
    events = []
    stream = agent.stream(
        {"messages": conversation(6, size=600)},
        {"configurable": {"thread_id": thread}},
        stream_mode=["custom", "updates"],
    )
    for mode, chunk in stream:
        if mode == "custom":
            events.append(chunk)
    return events


@pytest.mark.parametrize("name", sorted(OVERFLOW_BODIES))
def test_every_providers_overflow_forces_a_summary_and_the_run_succeeds(openai_stub, name):
    status, body = OVERFLOW_BODIES[name]
    openai_stub.error(status, body).reply(SUMMARY).reply("Recovered answer.")
    store = MemoryStore()
    agent = stub_agent(stub_chat(openai_stub), store)
    events = _run(agent, name)
    assert [e["status"] for e in events] == ["started", "completed"]
    assert events[-1]["level"] == "summary"
    assert len(openai_stub.requests) == 3
    assert "<messages>" in openai_stub.requests[1]["messages"][-1]["content"]  # the summary call
    retry = openai_stub.requests[2]
    assert len(retry["messages"]) < len(openai_stub.requests[0]["messages"])
    values = agent.get_state({"configurable": {"thread_id": name}}).values
    assert values["messages"][-1].content == "Recovered answer."
    assert values[SUMMARY_EVENT_KEY]["cutoff_index"] > 0


@pytest.mark.parametrize("name", sorted(NOT_OVERFLOW_BODIES))
def test_a_look_alike_propagates_without_a_compression(openai_stub, name):
    status, body = NOT_OVERFLOW_BODIES[name]
    openai_stub.error(status, body)
    agent = stub_agent(stub_chat(openai_stub), MemoryStore())
    events = []
    with pytest.raises(Exception) as info:
        events = _run(agent, name)
    assert getattr(info.value, "status_code", None) == status
    assert events == [] and len(openai_stub.requests) == 1


async def test_a_gemini_list_body_overflow_recovers_on_the_async_path(openai_stub):
    openai_stub.error(*OVERFLOW_BODIES["gemini"]).reply(SUMMARY).reply("Recovered answer.")
    agent = stub_agent(stub_chat(openai_stub), MemoryStore())
    result = await agent.ainvoke(
        {"messages": conversation(6, size=600)}, {"configurable": {"thread_id": "g"}}
    )
    assert result["messages"][-1].content == "Recovered answer." and len(openai_stub.requests) == 3


WORDINGS = st.builds(
    "{} {} ({}) exceeds the {} of {}".format,
    st.sampled_from(["The prompt", "Input", "Your request", "The conversation"]),
    st.sampled_from(["token count", "length in tokens", "context size"]),
    st.integers(min_value=8_193, max_value=2_000_000),
    st.sampled_from(["limit", "maximum", "context limit"]),
    st.integers(min_value=1_000, max_value=8_192),
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=WORDINGS, status=st.sampled_from([400, 413]), listed=st.booleans())
def test_an_unseen_providers_overflow_wording_forces_compression_through_the_client(message, status, listed):
    error = {"error": {"code": status, "message": message}}
    stub = OpenAIStub().start()
    try:
        stub.error(status, [error] if listed else error).reply(SUMMARY).reply("Recovered answer.")
        agent = stub_agent(stub_chat(stub), MemoryStore())
        events = _run(agent, "unseen")
        assert [e["status"] for e in events] == ["started", "completed"]
        assert len(stub.requests) == 3
    finally:
        stub.stop()
