"""Issue 24's run-level invariants through the HTTP API: a message posted to
``/api/threads/{id}/messages`` runs the agent with the real OpenAI client against the local
OpenAI-protocol stub. Every provider's overflow forces a compression and the run succeeds (5); a
calibration learned from a misreporting provider never sends a request our own estimate says is over
the window (1); a run of one ideograph under an Ollama-tagged Qwen model is estimated near what the
server counts (7)."""

from __future__ import annotations

import pytest

from agent_platform.calibration.models import TokenCalibration
from agent_platform.calibration.selectors import calibration_key
from agent_platform.models import Agent, ModelEndpoint
from context_engine.formats import RECEIPT_HEADER
from context_engine.state import SUMMARY_EVENT_KEY, TOKEN_USAGE_KEY
from context_engine.tokens.messages import estimate_messages, estimate_text, profile_for_model
from conversations.models import AgentRun
from tests.compression._threads import repository_for, seed_state
from tests.context_engine.chats import SUMMARY, conversation_messages
from tests.context_engine.policy.provider_errors import OVERFLOW_BODIES
from tests.support.openai_stub import OpenAIStub

pytestmark = pytest.mark.django_db


def _agent(stub: OpenAIStub, monkeypatch, **fields) -> Agent:
    from django.conf import settings

    monkeypatch.setenv("STUB_API_KEY", "sk-test")
    monkeypatch.setattr(settings, "MODEL_KEY_BINDINGS", f"STUB_API_KEY={stub.origin}")
    endpoint = ModelEndpoint.objects.create(name="stub", base_url=stub.base_url, api_key_env="STUB_API_KEY")
    fields = {"model_name": "gpt-4o-mini", "summary_keep_messages": 4, **fields}
    return Agent.objects.create(name="Stubbed", slug="stubbed", endpoint=endpoint, **fields)


def _post(client, user, agent, content: str, capture, *, history=None):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=agent.slug)
    if history:
        seed_state(thread, history)
    client.force_login(user)
    with capture(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages", {"content": content}, content_type="application/json"
        )
    assert response.status_code == 202, response.content
    return thread, AgentRun.objects.get(conversation=thread)


def _summary_calls(stub: OpenAIStub) -> list[dict]:
    return [r for r in stub.requests if "<messages>" in str(r["messages"][-1].get("content"))]


@pytest.mark.parametrize("name", sorted(OVERFLOW_BODIES))
def test_every_providers_overflow_forces_a_compression_and_the_run_succeeds(
    client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks, name
):
    status, body = OVERFLOW_BODIES[name]
    openai_stub.error(status, body).reply(SUMMARY).reply("Recovered answer.")
    agent = _agent(openai_stub, monkeypatch)

    thread, run = _post(
        client,
        user,
        agent,
        "And the next document?",
        django_capture_on_commit_callbacks,
        history=conversation_messages(5),
    )

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert len(_summary_calls(openai_stub)) == 1
    assert SUMMARY_EVENT_KEY in repository_for(thread).get_values()
    assert thread.messages.filter(role="assistant", content="Recovered answer.").exists()


def test_a_misreporting_provider_never_gets_a_request_over_the_window_by_our_estimate(
    client, user, monkeypatch, django_capture_on_commit_callbacks
):
    stub = OpenAIStub().start()
    try:
        stub.reply(SUMMARY).reply("Answer.")
        # T is 90% of a 16,384-token window; the calibration says requests are half what we estimate.
        agent = _agent(stub, monkeypatch, context_window=16_384, summary_threshold=100)
        TokenCalibration.objects.create(**calibration_key(agent=agent), factor=0.5, observations=50)
        history = conversation_messages(12, big_result_chars=10_000)  # ~21K tokens by our estimate
        profile = profile_for_model(agent.resolved_model_name)
        assert (
            estimate_messages(history, profile=profile)
            > 16_384
            > 0.5 * estimate_messages(history, profile=profile)
        )

        _thread, run = _post(
            client, user, agent, "Go on.", django_capture_on_commit_callbacks, history=history
        )
    finally:
        stub.stop()

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    sent = [r for r in stub.requests if r not in _summary_calls(stub)]
    # Compressed although the calibrated size was under T: the large results went out as receipts.
    assert sent and RECEIPT_HEADER in str(sent[0]["messages"])
    for request in sent:  # what the model received, by our own raw estimate (text alone: a floor)
        assert sum(estimate_text(str(m.get("content") or ""), profile) for m in request["messages"]) < 16_384


def test_a_run_of_one_ideograph_under_an_ollama_tag_is_estimated_near_the_servers_count(
    client, user, monkeypatch, django_capture_on_commit_callbacks
):
    def one_per_ideograph(body: dict) -> int:  # as Qwen's tokenizer counts such a run, plus framing
        return sum(str(m.get("content") or "").count("中") for m in body["messages"]) + 60

    stub = OpenAIStub(model="qwen2.5:7b", prompt_tokens=one_per_ideograph).start()
    try:
        stub.reply("好的。")
        agent = _agent(stub, monkeypatch, model_name="qwen2.5:7b")
        thread, run = _post(client, user, agent, "中" * 3000, django_capture_on_commit_callbacks)
    finally:
        stub.stop()

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    usage = repository_for(thread).get_values()[TOKEN_USAGE_KEY]
    assert usage["reported_input_tokens"] >= 3000
    assert usage["estimated_input_tokens"] >= 0.9 * usage["reported_input_tokens"]
