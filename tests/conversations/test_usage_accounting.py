"""Usage accounting (issue 27, item 7): every reply's and every summary call's provider-reported
tokens, priced at the endpoint's prices, summed per user, agent and day, served to the user by
``GET /api/usage`` and to the admin by ``/admin/usage/``; each reply's usage on the thread page."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.utils import timezone

from agent_platform.models import Agent, ModelEndpoint
from conversations.models import AgentRun, UsageRecord
from conversations.services.usage import usage_record_summary
from tests.compression._threads import seed_state
from tests.context_engine.chats import SUMMARY, conversation_messages

pytestmark = pytest.mark.django_db

SUMMARY_USAGE = {"prompt_tokens": 1_200, "completion_tokens": 230, "total_tokens": 1_430}
FIRST_REPLY = {"prompt_tokens": 640, "completion_tokens": 41, "total_tokens": 681}
SECOND_REPLY = {"prompt_tokens": 702, "completion_tokens": 17, "total_tokens": 719}


@pytest.fixture
def priced_agent(openai_stub, monkeypatch) -> Agent:
    monkeypatch.setenv("STUB_API_KEY", "sk-test")
    endpoint = ModelEndpoint.objects.create(
        name="stub",
        base_url=openai_stub.base_url,
        api_key_env="STUB_API_KEY",
        input_price_per_million=Decimal("2.50"),
        output_price_per_million=Decimal("10.00"),
    )
    return Agent.objects.create(
        name="Priced", slug="priced", endpoint=endpoint, model_name="gpt-4o-mini", summary_keep_messages=4
    )


def _send(client, thread, content: str, capture) -> AgentRun:
    with capture(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages", {"content": content}, content_type="application/json"
        )
    assert response.status_code == 202, response.content
    return AgentRun.objects.filter(conversation=thread).latest("id")


def _price(usage: dict[str, int]) -> Decimal:
    return (Decimal(usage["prompt_tokens"]) * Decimal("2.5") + usage["completion_tokens"] * 10) / 1_000_000


def test_a_threads_usage_equals_what_the_stub_reported(
    client, user, openai_stub, priced_agent, django_capture_on_commit_callbacks
):
    from conversations.services import thread_create

    # The first request overflows: a forced summary (its own usage), then the reply; then a second turn.
    openai_stub.context_overflow().reply(SUMMARY, usage=SUMMARY_USAGE).reply("Recovered.", usage=FIRST_REPLY)
    openai_stub.reply("Second answer.", usage=SECOND_REPLY)
    thread = thread_create(user=user, agent_slug=priced_agent.slug)
    seed_state(thread, conversation_messages(5))
    client.force_login(user)
    first = _send(client, thread, "And the next document?", django_capture_on_commit_callbacks)
    second = _send(client, thread, "Thanks. One more?", django_capture_on_commit_callbacks)
    assert first.status == second.status == AgentRun.Status.SUCCEEDED, (first.error, second.error)

    replies = UsageRecord.objects.filter(kind="reply").order_by("id")
    assert [(r.input_tokens, r.output_tokens) for r in replies] == [
        (FIRST_REPLY["prompt_tokens"], FIRST_REPLY["completion_tokens"]),
        (SECOND_REPLY["prompt_tokens"], SECOND_REPLY["completion_tokens"]),
    ]
    assert [r.message.content for r in replies] == ["Recovered.", "Second answer."]
    [summary] = UsageRecord.objects.filter(kind="summary")
    assert (summary.input_tokens, summary.output_tokens) == (1_200, 230)
    assert summary.conversation_id == thread.pk and summary.owner_id == user.pk
    assert [r.cost for r in replies] == [_price(FIRST_REPLY), _price(SECOND_REPLY)]
    assert first.usage["input_tokens"] == FIRST_REPLY["prompt_tokens"]  # the run's totals agree

    body = client.get("/api/usage").json()
    total = body["total"]
    assert (total["reply_input_tokens"], total["reply_output_tokens"]) == (640 + 702, 41 + 17)
    assert (total["summary_input_tokens"], total["summary_output_tokens"], total["summary_calls"]) == (
        1_200,
        230,
        1,
    )
    assert total["replies"] == 2 and total["repair_calls"] == 0 and total["unpriced_calls"] == 0
    expected_cost = _price(FIRST_REPLY) + _price(SECOND_REPLY) + _price(SUMMARY_USAGE)
    assert Decimal(total["cost"]) == expected_cost
    assert [day["day"] for day in body["days"]] == [timezone.localdate().isoformat()]

    page = client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert 'class="message-usage"' in page and "640" in page and "41" in page


def test_a_repair_call_is_counted_as_such_and_not_twice(user, agent):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=agent.slug)
    repair = {"input_tokens": 900, "output_tokens": 150, "total_tokens": 1_050}
    usage_record_summary(
        conversation=thread,
        summary_usage={"input_tokens": 1_900, "output_tokens": 350, "total_tokens": 2_250, "repair": repair},
    )
    rows = {r.kind: (r.input_tokens, r.output_tokens, r.cost) for r in UsageRecord.objects.all()}
    assert rows == {"summary": (1_000, 200, None), "repair": (900, 150, None)}  # offline agent: no price


def test_no_reported_usage_leaves_no_record(user, agent):
    from conversations.services import thread_create

    usage_record_summary(conversation=thread_create(user=user, agent_slug=agent.slug), summary_usage={})
    assert not UsageRecord.objects.exists()


def test_an_endpoint_is_priced_with_both_prices_or_neither():
    endpoint = ModelEndpoint(name="half", base_url="https://api.example.com/v1", input_price_per_million=1)
    with pytest.raises(ValidationError) as caught:
        endpoint.full_clean()
    assert "output_price_per_million" in caught.value.message_dict
    endpoint.output_price_per_million = Decimal("-1")
    with pytest.raises(ValidationError):
        endpoint.full_clean()
    assert endpoint.cost(input_tokens=10, output_tokens=10) is not None
    assert ModelEndpoint(name="free").cost(input_tokens=10, output_tokens=10) is None


def _records(user, agent, **days_ago_tokens):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=agent.slug)
    for days, tokens in days_ago_tokens.items():
        record = UsageRecord.objects.create(
            kind="reply", owner=user, agent=agent, conversation=thread, input_tokens=tokens, output_tokens=1
        )
        when = timezone.now() - timedelta(days=int(days.removeprefix("d")))
        UsageRecord.objects.filter(pk=record.pk).update(created_at=when)


def test_the_api_gives_a_user_only_their_own_figures_in_the_range(client, user, other_user, agent):
    _records(user, agent, d0=100, d3=30, d40=4000)
    _records(other_user, agent, d0=7)
    client.force_login(user)
    assert client.get("/api/usage").json()["total"]["reply_input_tokens"] == 130  # the last 30 days
    today = timezone.localdate()
    since = (today - timedelta(days=45)).isoformat()
    body = client.get(f"/api/usage?since={since}&until={today.isoformat()}").json()
    assert body["total"]["reply_input_tokens"] == 4130 and len(body["days"]) == 3
    assert body["total"]["cost"] is None and body["total"]["unpriced_calls"] == 3


@pytest.mark.parametrize(
    "query",
    [
        "since=yesterday",
        "until=2026-13-01",
        "since=2026-02-01&until=2026-01-01",
        "since=2020-01-01&until=2026-01-01",
    ],
)
def test_a_bad_range_is_a_json_400(client, user, query):
    client.force_login(user)
    response = client.get(f"/api/usage?{query}")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_range" and response.json()["message"]


def test_the_admin_shows_usage_per_user_agent_and_day(client, django_user_model, user, other_user, agent):
    _records(user, agent, d0=100, d1=20)
    _records(other_user, agent, d0=7)
    accountant = django_user_model.objects.create_user("acc", password="pw-acc-12345", is_staff=True)
    client.force_login(accountant)
    assert client.get("/admin/usage/").status_code == 403  # staff alone sees nobody's spending
    accountant.user_permissions.add(Permission.objects.get(codename="view_usagerecord"))
    by_user = client.get("/admin/usage/?group=user")
    assert by_user.status_code == 200
    rows = {row.key: row.reply_input_tokens for row in by_user.context["report"].rows}
    assert rows == {"alice": 120, "bob": 7}
    by_agent = client.get("/admin/usage/?group=agent").context["report"]
    assert [(r.key, r.reply_input_tokens) for r in by_agent.rows] == [("Test agent", 127)]
    by_day = client.get("/admin/usage/?group=day").context["report"]
    assert [r.reply_input_tokens for r in by_day.rows] == [20, 107]
    assert client.get("/admin/usage/?since=nonsense").status_code == 400
    assert client.get("/admin/conversations/usagerecord/").status_code == 200


def test_the_endpoint_admin_takes_both_prices_or_neither(client, admin_user, settings):
    from tests.agent_platform.test_model_endpoints import ADD_URL, _endpoint_form

    settings.MODEL_KEY_BINDINGS = "PROVIDER_API_KEY=https://llm.example"  # the operator binds the key

    client.force_login(admin_user)
    response = client.post(ADD_URL, _endpoint_form(input_price_per_million="2.5"))
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["output_price_per_million"]
    response = client.post(
        ADD_URL, _endpoint_form(input_price_per_million="2.5", output_price_per_million="10")
    )
    assert response.status_code == 302
    endpoint = ModelEndpoint.objects.get()
    assert endpoint.cost(input_tokens=1_000_000, output_tokens=100_000) == Decimal("3.500000")
