"""The Prometheus endpoint is scraped around compressions made through the API with the real OpenAI
client against the local stub (issue 27, item 9): the compression, tokens-saved and summary-call
series move by what happened, and a failed summary call is counted as such."""

from __future__ import annotations

import pytest

from compression.models import CompressionRecord
from tests.compression._threads import seed_state
from tests.context_engine.chats import SUMMARY, conversation_messages
from tests.support.metrics import TOKEN, moved, scrape

pytestmark = pytest.mark.django_db


@pytest.fixture
def stub_thread(user, stub_agent_with, settings):
    from conversations.services import thread_create

    settings.METRICS_TOKEN = TOKEN
    thread = thread_create(user=user, agent_slug=stub_agent_with().slug)
    seed_state(thread, conversation_messages(5))
    return thread


def test_a_compression_moves_the_counters(client, user, stub_thread, openai_stub):
    before = scrape(client)
    openai_stub.reply(SUMMARY)
    client.force_login(user)
    response = client.post(f"/api/threads/{stub_thread.thread_id}/compress?wait=true")
    assert response.status_code == 200, response.content
    record = CompressionRecord.objects.get(conversation=stub_thread, status="completed")
    assert record.tokens_saved > 0

    after = scrape(client)
    labels = {"trigger": "manual", "level": "summary"}
    assert moved(before, after, "agent_platform_compressions_total", **labels, outcome="summarized") == 1
    assert (
        moved(before, after, "agent_platform_compression_tokens_saved_total", **labels) == record.tokens_saved
    )
    assert moved(before, after, "agent_platform_summary_call_seconds_count") == 1
    assert moved(before, after, "agent_platform_summary_call_failures_total") == 0
    assert ("agent_platform_runs_queued", ()) in after


def test_a_failed_summary_call_is_counted(client, user, stub_thread, openai_stub):
    before = scrape(client)
    openai_stub.error(400, {"error": {"message": "bad request", "type": "invalid_request_error"}})
    client.force_login(user)
    response = client.post(f"/api/threads/{stub_thread.thread_id}/compress?wait=true")
    assert response.status_code >= 400

    after = scrape(client)
    assert moved(before, after, "agent_platform_summary_call_failures_total") == 1
    assert moved(before, after, "agent_platform_summary_call_seconds_count") == 1
    failed = {"trigger": "manual", "level": "summary", "outcome": "failed"}
    assert moved(before, after, "agent_platform_compressions_total", **failed) == 1
