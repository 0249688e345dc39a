"""What a threshold would do (issue 27, item 3): the agent's threads under the hint, between the hint
and the trigger, and at or over it, today and with the typed value, from the stored figures in one
aggregate query, no checkpoint opened."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agent_platform.models import Agent
from context_engine.policy.pressure import hint_tokens
from conversations.models import Conversation
from conversations.selectors import agent_retune_counts

pytestmark = pytest.mark.django_db


def _thread(owner, agent, tokens, *, status=Conversation.Status.ACTIVE) -> Conversation:
    return Conversation.objects.create(owner=owner, agent=agent, context_tokens=tokens, status=status)


@pytest.fixture
def threads(user, other_user, agent):
    # Today's trigger is 102,400 (hint 87,035); typed 50 gives 51,200 (hint 43,520).
    for tokens in (1_000, 30_000, 45_000, 90_000, 110_000):
        _thread(user, agent, tokens)
    _thread(other_user, agent, 60_000)  # everyone's threads count, not only the caller's
    _thread(user, agent, None)  # never measured
    _thread(user, agent, 500_000, status=Conversation.Status.DELETED)  # deleted: left out
    elsewhere = Agent.objects.create(name="Other", slug="other")
    _thread(user, elsewhere, 500_000)  # another agent's: left out


def test_counts_today_and_with_the_typed_trigger_in_one_query(threads, agent, django_assert_num_queries):
    assert hint_tokens(102_400) == 87_035
    with django_assert_num_queries(1):
        counts = agent_retune_counts(agent_id=agent.pk, trigger_today=102_400, trigger_typed=51_200)
    assert counts.today == {"under_hint": 4, "hint_to_trigger": 1, "over_trigger": 1}
    assert counts.typed == {"under_hint": 2, "hint_to_trigger": 1, "over_trigger": 3}
    assert (counts.unmeasured, counts.measured) == (1, 6)


def test_the_lines_are_the_hint_and_the_trigger_exactly(user, agent):
    trigger = 10_000
    hint = hint_tokens(trigger)
    for tokens in (hint - 1, hint, trigger - 1, trigger):
        _thread(user, agent, tokens)
    counts = agent_retune_counts(agent_id=agent.pk, trigger_today=trigger, trigger_typed=trigger)
    assert counts.today == {"under_hint": 1, "hint_to_trigger": 2, "over_trigger": 1}


def test_the_json_view_uses_the_typed_value_and_opens_no_checkpoint(
    client, admin_user, threads, agent, monkeypatch
):
    def no_checkpoints(*args, **kwargs):
        raise AssertionError("a checkpoint was opened")

    monkeypatch.setattr("agent_platform.runtime.graph.state_graph_for", no_checkpoints)
    monkeypatch.setattr("agent_platform.runtime.graph.checkpointer_get", no_checkpoints)
    client.force_login(admin_user)
    body = client.get(reverse("agent-retune", args=[agent.pk]), {"summary_threshold": "50"}).json()
    assert (body["trigger_today"], body["trigger_typed"]) == (102_400, 51_200)
    assert body["typed"] == {"under_hint": 2, "hint_to_trigger": 1, "over_trigger": 3}
    assert 'data-when="typed">3<' in body["html"] and "With the typed value (trigger 51,200)" in body["html"]
    agent.refresh_from_db()
    assert agent.summary_threshold == 100


def test_a_typed_window_moves_the_typed_trigger_too(client, admin_user, threads, agent):
    client.force_login(admin_user)
    body = client.get(reverse("agent-retune", args=[agent.pk]), {"context_window": "50000"}).json()
    assert body["trigger_typed"] == 45_000  # 90% of the typed window caps the 102,400
    # Issue 39: the table says so, beside the capped figure; today's T is not capped.
    assert body["trigger_typed_capped"] is True
    assert (
        '<span class="retune-capped" data-when="typed">(capped at 90% of the 50,000-token window; '
        "the threshold asks for 102,400)</span>" in body["html"]
    )
    assert 'data-when="today">(' not in body["html"]
    uncapped = client.get(reverse("agent-retune", args=[agent.pk]), {"summary_threshold": "50"}).json()
    assert uncapped["trigger_typed_capped"] is False and "retune-capped" not in uncapped["html"]


def test_the_retune_table_follows_the_threshold_it_explains(client, admin_user, threads, agent):
    """Issue 39: right under the threshold's fieldset, before the other compression fields."""
    client.force_login(admin_user)
    page = client.get(reverse("admin:agent_platform_agent_change", args=[agent.pk])).content.decode()
    threshold = page.index('name="summary_threshold"')
    table = page.index('id="agent-retune"')
    keep = page.index('name="summary_keep_messages"')
    assert threshold < table < keep


def test_the_change_form_shows_today_and_a_bad_value_is_a_json_error(client, admin_user, threads, agent):
    client.force_login(admin_user)
    page = client.get(reverse("admin:agent_platform_agent_change", args=[agent.pk])).content.decode()
    assert "What this threshold would do" in page and 'id="agent-retune"' in page
    assert "6 active threads of this agent with a stored figure; 1 not measured yet" in page
    response = client.get(reverse("agent-retune", args=[agent.pk]), {"summary_threshold": "many"})
    assert response.status_code == 400 and response.json()["code"] == "invalid_value"
    missing = client.get(reverse("agent-retune", args=[999_999]))
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
