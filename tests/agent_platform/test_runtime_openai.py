"""The real OpenAI client path (langchain-openai ChatOpenAI) against a local OpenAI-protocol stub."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from agent_platform.models import Agent, ModelEndpoint
from agent_platform.runtime.models import ModelConfigurationError, chat_model_for
from context_engine.policy.overflow import is_context_overflow
from conversations.models import AgentRun
from conversations.services import message_intake, thread_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def openai_agent(openai_stub, monkeypatch):
    monkeypatch.setenv("STUB_API_KEY", "sk-test")
    endpoint = ModelEndpoint.objects.create(
        name="stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY"
    )
    return Agent.objects.create(
        name="Stubbed",
        slug="stubbed",
        endpoint=endpoint,
        model_name="gpt-4o-mini",
        temperature=0.0,
        tools=["ls", "read_file", "write_file"],
    )


def _run(user, agent, content, capture):
    thread = thread_create(user=user, agent_slug=agent.slug)
    with capture(execute=True):
        result = message_intake(thread_id=thread.thread_id, user=user, content=content)
    result.run.refresh_from_db()
    return thread, result.run


def test_tool_call_round_trip_streams_through_the_openai_client(
    user, openai_agent, openai_stub, django_capture_on_commit_callbacks, monkeypatch
):
    sent: list[dict] = []
    monkeypatch.setattr("conversations.events._send", lambda thread_id, event: sent.append(event))
    openai_stub.tool_call("write_file", {"path": "notes/a.md", "content": "hello"}, call_id="call_w1")
    openai_stub.reply("I wrote notes/a.md for you.")
    thread, run = _run(user, openai_agent, "write a note", django_capture_on_commit_callbacks)

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    first, second = openai_stub.requests
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assert first["model"] == "gpt-4o-mini"
    assert {t["function"]["name"] for t in first["tools"]} == {
        "ls",
        "read_file",
        "write_file",
        "search_history",
    }
    assert first["messages"][-1] == {"role": "user", "content": "write a note"}
    tool_result = second["messages"][-1]
    assert tool_result["role"] == "tool" and tool_result["tool_call_id"] == "call_w1"

    roles = list(thread.messages.order_by("seq").values_list("role", "tool_name"))
    assert roles == [("user", ""), ("assistant", ""), ("tool", "write_file"), ("assistant", "")]
    assert thread.messages.get(role="assistant", tool_calls=[]).content == "I wrote notes/a.md for you."
    tokens = [e["text"] for e in sent if e["type"] == "run.token"]
    assert len(tokens) > 1 and "".join(tokens) == "I wrote notes/a.md for you."
    assert run.usage["model_calls"] == 2 and run.usage["input_tokens"] > 0  # usage from the final SSE chunk


def test_a_provider_error_fails_the_run_in_plain_words_and_keeps_its_message_for_the_admin(
    user, openai_agent, openai_stub, django_capture_on_commit_callbacks
):
    openai_stub.error(400, {"error": {"message": "model does not exist", "type": "invalid_request_error"}})
    _thread, run = _run(user, openai_agent, "hi", django_capture_on_commit_callbacks)
    assert run.status == AgentRun.Status.FAILED
    assert run.error == "The model service refused the request. An administrator can see why."
    assert (
        "Error: Error code: 400 - model does not exist" in run.error_detail
    )  # class and text, for the admin


def test_non_streaming_invoke_gets_json_completions_and_tool_calls(openai_agent, openai_stub):
    openai_stub.tool_call("ls", {"path": "."}, call_id="call_ls")
    model = chat_model_for(openai_agent)
    reply = model.invoke("list files")
    assert reply.tool_calls == [{"name": "ls", "args": {"path": "."}, "id": "call_ls", "type": "tool_call"}]
    assert "stream" not in openai_stub.requests[0] or openai_stub.requests[0]["stream"] is False
    assert reply.usage_metadata["total_tokens"] > 0


def test_a_context_overflow_from_the_real_client_is_recognised_as_one(openai_agent, openai_stub):
    openai_stub.context_overflow()
    with pytest.raises(Exception) as excinfo:  # noqa: PT011 - whatever the client raises must be recognised
        chat_model_for(openai_agent).invoke("hi")
    assert is_context_overflow(excinfo.value)


def test_agent_settings_reach_the_client(openai_agent, openai_stub):
    model = chat_model_for(openai_agent)
    assert model.model_name == "gpt-4o-mini"
    assert model.openai_api_base == openai_stub.base_url
    assert model.openai_api_key.get_secret_value() == "sk-test"
    assert model.stream_usage is True and model.temperature == 0.0


def test_an_endpoint_whose_key_variable_is_unset_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("NO_SUCH_API_KEY", raising=False)
    endpoint = ModelEndpoint(name="keyless", base_url="https://llm.example/v1", api_key_env="NO_SUCH_API_KEY")
    agent = Agent(slug="keyless", endpoint=endpoint, model_name="gpt-4o")
    with pytest.raises(ModelConfigurationError, match="NO_SUCH_API_KEY"):
        chat_model_for(agent)


def test_an_endpoint_without_a_key_variable_sends_a_placeholder_key(openai_stub):
    endpoint = ModelEndpoint.objects.create(name="local", base_url=openai_stub.base_url)
    agent = Agent(slug="local", endpoint=endpoint, model_name="llama3.1")
    assert chat_model_for(agent).openai_api_key.get_secret_value() == "not-needed"


def test_the_offline_agent_gets_the_offline_model(agent):
    from agent_platform.runtime.offline import OfflineChatModel

    assert isinstance(chat_model_for(agent), OfflineChatModel)


def test_reported_prompt_tokens_calibrate_the_model_for_every_later_run(
    user, openai_agent, openai_stub, django_capture_on_commit_callbacks
):
    from agent_platform.calibration.models import TokenCalibration
    from agent_platform.runtime.graph import state_repository_for
    from context_engine.tokens.calibration import Calibration
    from context_engine.tokens.messages import ESTIMATE_KEY

    readings: list[int] = []

    def prompt_tokens(body: dict) -> int:  # this provider's count: messages and tools, ~5 chars a token
        readings.append(len(json.dumps([body["messages"], body.get("tools")])) // 5)
        return readings[-1]

    openai_stub.prompt_tokens = prompt_tokens
    openai_stub.reply("First answer.")
    thread, run = _run(user, openai_agent, "hello there, " * 40, django_capture_on_commit_callbacks)
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    stored = TokenCalibration.objects.get()
    assert (stored.endpoint_key, stored.model_key, stored.profile, stored.observations) == (
        openai_stub.base_url,
        "gpt-4o-mini",
        "o200k",
        1,
    )
    usage = state_repository_for(thread).get_values()["token_usage"]
    # One reading moves the factor towards it by a bounded step, never outright (issue 24).
    expected = Calibration().observe(estimated=usage["estimated_input_tokens"], reported=readings[0])
    assert stored.factor == expected.factor != 1.0

    # The next run (a new graph, as on any worker) starts from the stored factor and adds its reading.
    openai_stub.reply("Second answer.")
    with django_capture_on_commit_callbacks(execute=True):
        result = message_intake(thread_id=thread.thread_id, user=user, content="and more " * 30)
    values = state_repository_for(thread).get_values()
    assert values["token_usage"]["calibration"]["observations"] == 2
    assert TokenCalibration.objects.get().observations == 2
    assert result.run.pk
    # Every message of the thread carries its stored estimate; the provider never saw it.
    assert all(ESTIMATE_KEY in m.response_metadata for m in values["messages"])
    assert all("token_estimate" not in json.dumps(r) for r in openai_stub.requests)


def test_a_thread_with_tool_calls_an_image_and_non_ascii_text_reaches_the_endpoint_as_built(
    openai_agent, openai_stub
):
    pixel = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
    thread = [
        SystemMessage("You are terse."),
        HumanMessage(
            [{"type": "text", "text": "What is in it?"}, {"type": "image_url", "image_url": {"url": pixel}}]
        ),
        AIMessage("", tool_calls=[{"id": "call_1", "name": "ls", "args": {"path": ".", "depth": 2}}]),
        ToolMessage("one white pixel \u00e9\u4e2d", tool_call_id="call_1", name="ls"),
        HumanMessage("Thanks. And now?"),
    ]
    openai_stub.reply("A short answer.")

    chunks = list(chat_model_for(openai_agent).stream(thread))

    assert "".join(str(chunk.content) for chunk in chunks) == "A short answer."
    assert sum(chunks[1:], chunks[0]).usage_metadata["input_tokens"] > 0  # the stream's usage chunk
    (body,) = openai_stub.requests
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in it?"},
                {"type": "image_url", "image_url": {"url": pixel}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "type": "function",
                    "id": "call_1",
                    "function": {"name": "ls", "arguments": '{"path": ".", "depth": 2}'},
                }
            ],
        },
        {"role": "tool", "content": "one white pixel \u00e9\u4e2d", "tool_call_id": "call_1"},
        {"role": "user", "content": "Thanks. And now?"},
    ]
