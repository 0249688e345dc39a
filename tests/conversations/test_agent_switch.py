"""A per-thread agent switch and "regenerate with another agent" (issue 39 item 6): the next turn runs
with the new agent on the same checkpoint (the whole history), the thread's budget and compression
follow the new agent's window at once, and a busy thread or an agent the user may not use is refused."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from agent_platform.models import Agent
from agent_platform.runtime.graph import state_repository_for
from context_engine.policy.pressure import pressure_now
from context_engine.state import SUMMARY_EVENT_KEY
from conversations.errors import AgentNotFound
from conversations.models import AgentRun, Conversation, MessageFork
from conversations.services import thread_create
from conversations.services.agent_switch import thread_agent_switch
from conversations.services.versions import reply_regenerate
from tests.conversations.conftest import ScriptedChatModel
from tests.conversations.page_support import write_token_usage

pytestmark = pytest.mark.django_db

# Four turns of it are well over a 4,000-token window's trigger (3,600), far under the default agent's.
PARAGRAPH = " ".join(f"word{i} of a long paragraph about context budgets" for i in range(120))


@pytest.fixture
def small_agent(db):
    """An enabled agent with a 4,000-token window: its trigger is capped at 3,600 tokens."""
    return Agent.objects.create(
        name="Small window", slug="small", context_window=4000, summary_keep_messages=2
    )


@pytest.fixture
def models_by_agent(monkeypatch):
    """Each agent answers with its own scripted model: which one a run used is visible."""
    models: dict[str, ScriptedChatModel] = {}

    def model_for(agent):
        return models.setdefault(
            agent.slug, ScriptedChatModel(script=[f"{agent.slug} answers"] * 5, calls=[])
        )

    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", model_for)
    return models


def _texts(messages) -> list[str]:
    return [m.content if isinstance(m.content, str) else m.text for m in messages]


def test_the_next_turn_runs_with_the_new_agent_on_the_whole_history(
    owner_client, thread, small_agent, say, models_by_agent
):
    say("Remember the number 41.")
    response = owner_client.post(
        f"/api/threads/{thread.thread_id}/agent", {"agent": "small"}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["agent"] == "small" and body["context_window"] == 4000 and body["trigger_tokens"] == 3600
    assert Conversation.objects.get(pk=thread.pk).agent_id == small_agent.pk

    message = say("Which number?")  # tests/conversations/conftest.py: the user's message, its run succeeded
    assert message.content == "Which number?"
    assert len(models_by_agent["test-agent"].calls) == 1 and len(models_by_agent["small"].calls) == 1
    seen = _texts(models_by_agent["small"].calls[0])
    assert "Remember the number 41." in seen and "test-agent answers" in seen  # the history, kept
    view = _texts(state_repository_for(thread).get_values()["messages"])
    assert view[-1] == "small answers" and view[0] == "Remember the number 41."


def test_a_busy_thread_keeps_its_agent(owner_client, thread, small_agent, user):
    AgentRun.objects.create(conversation=thread, kind=AgentRun.Kind.CHAT, status=AgentRun.Status.QUEUED)
    response = owner_client.post(
        f"/api/threads/{thread.thread_id}/agent", {"agent": "small"}, content_type="application/json"
    )
    assert response.status_code == 409
    assert response.json()["code"] == "thread_busy" and response.json()["message"]
    assert Conversation.objects.get(pk=thread.pk).agent.slug == "test-agent"


@pytest.mark.parametrize("slug", ["disabled", "no-such-agent", "nul\x00"])
def test_an_agent_the_user_may_not_use_is_refused(owner_client, thread, slug):
    Agent.objects.create(name="Disabled", slug="disabled", is_enabled=False)
    response = owner_client.post(
        f"/api/threads/{thread.thread_id}/agent", {"agent": slug}, content_type="application/json"
    )
    assert response.status_code == 404
    assert response.json()["code"] == "agent_not_found"
    assert Conversation.objects.get(pk=thread.pk).agent.slug == "test-agent"


def test_only_the_owner_switches(client, other_user, thread, small_agent):
    client.force_login(other_user)
    response = client.post(
        f"/api/threads/{thread.thread_id}/agent", {"agent": "small"}, content_type="application/json"
    )
    assert response.status_code == 404 and response.json()["code"] == "thread_not_found"
    assert Conversation.objects.get(pk=thread.pk).agent.slug == "test-agent"


def test_budget_and_compression_follow_the_new_agents_window_at_once(
    owner_client, thread, small_agent, say, user
):
    for turn in range(4):
        say(f"Turn {turn}: {PARAGRAPH}")
    before = Conversation.objects.get(pk=thread.pk)
    assert before.pressure_ratio is not None and before.pressure_ratio < 0.1  # the default agent's budget
    assert SUMMARY_EVENT_KEY not in state_repository_for(thread).get_values()

    thread_agent_switch(thread_id=thread.thread_id, user=user, agent_slug="small")

    after = Conversation.objects.get(pk=thread.pk)
    assert after.trigger_tokens == 3600 and after.pressure_ratio > 1  # recomputed on the new window, now
    state = owner_client.get(f"/api/threads/{thread.thread_id}/state").json()
    assert state["token_usage"]["summary_trigger_tokens"] == 3600
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert "Now using Small window — window 4K tokens, compression at 3.6K tokens." in page

    say("And now?")  # over the new agent's trigger: this run compresses first
    values = state_repository_for(thread).get_values()
    assert isinstance(values.get(SUMMARY_EVENT_KEY), dict)
    assert Conversation.objects.get(pk=thread.pk).summary_active


def test_regenerate_with_another_agent(
    owner_client, thread, small_agent, say, models_by_agent, django_capture_on_commit_callbacks
):
    say("Name a colour.")
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(
            f"/api/threads/{thread.thread_id}/regenerate",
            {"request_id": "again-1", "agent": "small"},
            content_type="application/json",
        )
    assert response.status_code == 202, response.content
    run = AgentRun.objects.get(pk=response.json()["run"]["id"])
    assert run.status == AgentRun.Status.SUCCEEDED, run.error_detail
    assert Conversation.objects.get(pk=thread.pk).agent_id == small_agent.pk
    assert MessageFork.objects.get(conversation=thread).kind == MessageFork.Kind.REGENERATE
    view = _texts(state_repository_for(thread).get_values()["messages"])
    assert view == ["Name a colour.", "small answers"]  # the new agent's reply replaced the first one


def test_regenerate_with_a_forbidden_agent_changes_nothing(thread, say, user):
    say("Name a colour.")
    Agent.objects.create(name="Disabled", slug="disabled", is_enabled=False)
    with pytest.raises(AgentNotFound):
        reply_regenerate(thread_id=thread.thread_id, user=user, agent_slug="disabled")
    assert Conversation.objects.get(pk=thread.pk).agent.slug == "test-agent"
    assert not MessageFork.objects.exists() and thread.runs.count() == 1


def test_the_page_switches_and_says_so(client, user, thread, small_agent):
    client.force_login(user)
    response = client.post(f"/threads/{thread.thread_id}/agent", {"agent": "small"}, follow=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count("Now using Small window — window 4K tokens, compression at 3.6K tokens.") == 2
    assert 'id="agent-switch"' in page and 'value="small" selected' in page


@hypothesis_settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    tokens=st.integers(min_value=0, max_value=300_000),
    budgets=st.lists(
        st.tuples(st.integers(min_value=2_000, max_value=400_000), st.integers(min_value=1, max_value=200)),
        min_size=1,
        max_size=4,
    ),
)
def test_the_stored_pressure_always_follows_the_agent_switched_to(agent, user, tokens, budgets):
    """Property: whatever the measured request and whatever agents (windows, thresholds) the thread is
    switched through, after each switch the thread's row holds the new agent's trigger, the pressure
    the page's meter computes from the row's ``token_usage`` on that agent, and the same ratio."""
    thread = thread_create(user=user, agent_slug=agent.slug)  # a new one per example
    write_token_usage(thread, {"next_llm_input_tokens": tokens, "llm_input_tokens": tokens})
    for index, (window, threshold) in enumerate(budgets):
        slug = f"budget-{index}-{window}-{threshold}"
        target, _ = Agent.objects.get_or_create(
            slug=slug, defaults={"name": slug, "context_window": window, "summary_threshold": threshold}
        )
        thread_agent_switch(thread_id=thread.thread_id, user=user, agent_slug=slug)
        row = Conversation.objects.get(pk=thread.pk)
        assert row.agent_id == target.pk
        assert row.trigger_tokens == target.effective_trigger
        meter = pressure_now(
            row.token_usage,
            trigger_tokens=target.effective_trigger,
            context_window=target.resolved_context_window,
        )
        assert row.pressure_ratio == meter["summary_pressure_ratio"]
        assert row.token_usage["summary_trigger_tokens"] == target.effective_trigger
