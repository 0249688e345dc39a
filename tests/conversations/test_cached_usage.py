"""Cached prompt tokens (issue 40, item 1): every provider's cache fields read from every reply, streamed
or not, and from summary calls; stored beside input and output tokens; priced at the endpoint's cached
and cache-write prices; shown per reply, per thread, in the usage pages and in the export."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from agent_platform.models import Agent, ModelEndpoint
from conversations.models import AgentRun, UsageRecord
from conversations.services.usage import usage_record_summary

pytestmark = pytest.mark.django_db

INPUT, CACHED, WRITE, OUTPUT = Decimal("2.00"), Decimal("0.50"), Decimal("2.50"), Decimal("8.00")
# About 2,400 stub tokens of text (JSON characters / 4): past the 1,024 a provider caches from.
LONG_QUESTION = "Please read this carefully. " + " ".join(f"clause-{i} of the contract" for i in range(420))


@pytest.fixture
def cached_agent(openai_stub, monkeypatch) -> Agent:
    monkeypatch.setenv("STUB_API_KEY", "sk-test")
    endpoint = ModelEndpoint.objects.create(
        name="caching stub",
        base_url=openai_stub.base_url,
        api_key_env="STUB_API_KEY",
        input_price_per_million=INPUT,
        output_price_per_million=OUTPUT,
        cached_input_price_per_million=CACHED,
        cache_write_price_per_million=WRITE,
    )
    return Agent.objects.create(name="Cached", slug="cached", endpoint=endpoint, model_name="gpt-4o-mini")


def _send(client, thread, content: str, capture) -> AgentRun:
    with capture(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages", {"content": content}, content_type="application/json"
        )
    assert response.status_code == 202, response.content
    run = AgentRun.objects.filter(conversation=thread).latest("id")
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    return run


def _expected_cost(prompt: int, cached: int, completion: int, written: int = 0) -> Decimal:
    total = (prompt - cached - written) * INPUT + cached * CACHED + written * WRITE + completion * OUTPUT
    return (total / Decimal(1_000_000)).quantize(Decimal("0.000001"))


def test_the_cached_tokens_the_stub_reported_are_recorded_and_priced(
    client, user, openai_stub, cached_agent, django_capture_on_commit_callbacks
):
    """Through the real ChatOpenAI client (streamed, usage in the last chunk): the stub reports the
    prefix shared with the previous request, in 128-token blocks; the record holds exactly that and is
    priced from the admin's table."""
    from conversations.services import thread_create

    openai_stub.reply("First answer.").reply("Second answer.")
    thread = thread_create(user=user, agent_slug=cached_agent.slug)
    client.force_login(user)
    _send(client, thread, LONG_QUESTION, django_capture_on_commit_callbacks)
    second = _send(client, thread, "And the termination clause?", django_capture_on_commit_callbacks)

    assert all(body.get("stream") for body in openai_stub.requests)
    first_cached, second_cached = openai_stub.cached_reported
    assert first_cached == 0  # nothing before the first request
    assert second_cached >= 1024 and second_cached % 128 == 0
    first, last = UsageRecord.objects.filter(kind="reply").order_by("id")
    assert (first.cache_read_tokens, last.cache_read_tokens) == (0, second_cached)
    assert last.cache_read_tokens < last.input_tokens
    assert last.cost == _expected_cost(last.input_tokens, second_cached, last.output_tokens)
    assert last.cost < _expected_cost(last.input_tokens, 0, last.output_tokens)  # the cache is cheaper
    assert second.usage["cache_read_tokens"] == second_cached  # the run's totals agree

    total = client.get("/api/usage").json()["total"]
    assert total["reply_cache_read_tokens"] == second_cached
    assert total["cached_share"] == round(second_cached / (first.input_tokens + last.input_tokens), 4)
    assert Decimal(total["cost"]) == first.cost + last.cost

    page = client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert 'id="thread-usage"' in page and 'class="usage-cached"' in page
    # The pressure panel: the latest request repeated the previous one but for its new end.
    assert 'id="prefix-reuse"' in page
    data = client.get(f"/api/threads/{thread.thread_id}/export.json").json()
    replies = [m["usage"] for m in data["messages"] if m["usage"]]
    assert [u["cache_read_tokens"] for u in replies] == [0, second_cached]
    assert [u["cost"] for u in replies] == [str(first.cost), str(last.cost)]
    assert data["usage"]["reply_cache_read_tokens"] == second_cached
    markdown = client.get(f"/api/threads/{thread.thread_id}/export.md").content.decode()
    assert f"{second_cached} from the prompt cache" in markdown


@pytest.mark.parametrize(
    "case",
    [
        # DeepSeek: hit + miss = prompt
        ({"prompt_cache_hit_tokens": 1_536, "prompt_cache_miss_tokens": 464}, 1_536, 0),
        # Anthropic's fields passed on by an OpenAI-compatible proxy
        ({"cache_read_input_tokens": 1_200, "cache_creation_input_tokens": 300}, 1_200, 300),
        # OpenAI
        ({"prompt_tokens_details": {"cached_tokens": 1_024}}, 1_024, 0),
    ],
    ids=["deepseek", "anthropic", "openai"],
)
def test_each_providers_cache_fields_are_read(
    client, user, openai_stub, cached_agent, django_capture_on_commit_callbacks, case
):
    from conversations.services import thread_create

    raw, read, written = case

    usage = {"prompt_tokens": 2_000, "completion_tokens": 40, "total_tokens": 2_040, **raw}
    openai_stub.reply("Answer.", usage=usage)
    thread = thread_create(user=user, agent_slug=cached_agent.slug)
    client.force_login(user)
    _send(client, thread, "Hello.", django_capture_on_commit_callbacks)
    [record] = UsageRecord.objects.filter(kind="reply")
    assert (record.input_tokens, record.cache_read_tokens, record.cache_write_tokens) == (
        2_000,
        read,
        written,
    )
    assert record.cost == _expected_cost(2_000, read, 40, written)


def test_a_summary_calls_cached_tokens_are_recorded_apart_from_its_repair(user, cached_agent):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=cached_agent.slug)
    repair = {"input_tokens": 900, "output_tokens": 150, "input_token_details": {"cache_read": 256}}
    usage_record_summary(
        conversation=thread,
        summary_usage={
            "input_tokens": 2_900,
            "output_tokens": 350,
            "input_token_details": {"cache_read": 1_280, "cache_creation": 100},
            "repair": repair,
        },
    )
    rows = {
        r.kind: (r.input_tokens, r.cache_read_tokens, r.cache_write_tokens) for r in UsageRecord.objects.all()
    }
    assert rows == {"summary": (2_000, 1_024, 100), "repair": (900, 256, 0)}
    summary = UsageRecord.objects.get(kind="summary")
    assert summary.cost == _expected_cost(2_000, 1_024, 200, 100)


def test_an_endpoint_without_prices_shows_tokens_only(client, user, agent):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=agent.slug)
    UsageRecord.objects.create(
        kind="reply",
        owner=user,
        agent=agent,
        conversation=thread,
        input_tokens=2_000,
        cache_read_tokens=1_024,
    )
    client.force_login(user)
    total = client.get("/api/usage").json()["total"]
    assert total["cost"] is None and total["cached_share"] == 0.512


def test_cache_prices_need_the_input_price_and_are_not_negative():
    endpoint = ModelEndpoint(
        name="half", base_url="https://api.example.com/v1", cached_input_price_per_million=1
    )
    with pytest.raises(ValidationError) as caught:
        endpoint.full_clean()
    assert "cached_input_price_per_million" in caught.value.message_dict
    endpoint.input_price_per_million, endpoint.output_price_per_million = Decimal(1), Decimal(1)
    endpoint.cache_write_price_per_million = Decimal(-1)
    with pytest.raises(ValidationError) as caught:
        endpoint.full_clean()
    assert "cache_write_price_per_million" in caught.value.message_dict
    # Without a cached price, cached tokens are billed at the input price.
    plain = ModelEndpoint(name="p", input_price_per_million=Decimal(2), output_price_per_million=Decimal(8))
    assert plain.cost(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=500_000) == Decimal(
        "2.000000"
    )


def test_the_spend_guard_can_be_set_in_cost(cached_agent, agent):
    """A cost limit becomes the guard's input-token cap at the endpoint's input price; with a token
    limit too, the stricter holds; an endpoint without prices takes no cost limit."""
    cached_agent.summary_max_cost_per_hour = Decimal("0.01")  # 0.01 at 2.00 per million: 5,000 tokens
    cached_agent.full_clean()
    assert cached_agent.compression_config().spend.max_input_tokens_per_hour == 5_000
    cached_agent.summary_max_input_tokens_per_hour = 3_000
    assert cached_agent.compression_config().spend.max_input_tokens_per_hour == 3_000
    cached_agent.summary_max_input_tokens_per_hour = 9_000
    assert cached_agent.compression_config().spend.max_input_tokens_per_hour == 5_000
    cached_agent.summary_max_cost_per_hour = Decimal(0)
    with pytest.raises(ValidationError) as caught:
        cached_agent.full_clean()
    assert "summary_max_cost_per_hour" in caught.value.message_dict
    agent.summary_max_cost_per_hour = Decimal("1")  # the offline agent: no endpoint, no prices
    with pytest.raises(ValidationError) as caught:
        agent.full_clean()
    assert "summary_max_cost_per_hour" in caught.value.message_dict


def test_the_endpoint_admin_takes_cache_prices_beside_input_and_output(client, admin_user, settings):
    from tests.agent_platform.test_model_endpoints import ADD_URL, _endpoint_form

    settings.MODEL_KEY_BINDINGS = "PROVIDER_API_KEY=https://llm.example"
    client.force_login(admin_user)
    response = client.post(ADD_URL, _endpoint_form(cached_input_price_per_million="0.25"))
    assert response.status_code == 200  # a cached price alone: the input and output prices first
    assert response.context["adminform"].form.errors["cached_input_price_per_million"]
    form = _endpoint_form(
        input_price_per_million="2.5",
        output_price_per_million="10",
        cached_input_price_per_million="0.25",
        cache_write_price_per_million="3.125",
    )
    assert client.post(ADD_URL, form).status_code == 302
    endpoint = ModelEndpoint.objects.get()
    cost = endpoint.cost(
        input_tokens=1_000_000, output_tokens=0, cache_read_tokens=600_000, cache_write_tokens=100_000
    )
    assert cost == Decimal("1.212500")  # 300k x 2.5 + 600k x 0.25 + 100k x 3.125, per million
