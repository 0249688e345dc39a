"""Issue 24 through the API: an agent whose summarizer is the offline model (no endpoint) gets a preview
whose size after is computed, and the compression then applies that size; a provider's agent keeps the
estimate (its model is called only when a compression is applied)."""

from __future__ import annotations

import pytest

from compression.models import CompressionRecord
from tests.compression._threads import seed_state, workdir_files
from tests.compression.test_preview_exact import generated_thread

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("keep_four")]


def _preview(client, thread):
    response = client.post(f"/api/threads/{thread.thread_id}/compress/preview")
    assert response.status_code == 200, response.content
    return response.json()


def _apply(client, thread, preview_id):
    response = client.post(f"/api/threads/{thread.thread_id}/compress?wait=true&preview_id={preview_id}")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("seed", [3, 11])
def test_the_offline_agents_preview_is_the_size_it_applies(client, user, thread, seed):
    messages = generated_thread(seed)
    half = len(messages) // 2
    seed_state(thread, messages[:half])
    client.force_login(user)

    files = workdir_files(thread)
    first = _preview(client, thread)
    assert (
        first["status"] == "ready" and first["estimate_exact"] is True and first["estimate_unsure"] is False
    )
    assert first["estimated_after_range"] == [first["estimated_after_tokens"]] * 2
    assert workdir_files(thread) == files  # the summary was computed, nothing written
    applied = _apply(client, thread, first["preview_id"])
    assert applied["status"] == "completed"
    assert first["estimated_after_tokens"] == applied["after_tokens"]

    # A second summary names the thread's history file, known now: the preview is the applied size.
    seed_state(thread, messages[half:])
    second = _preview(client, thread)
    assert second["estimate_exact"] is True
    applied = _apply(client, thread, second["preview_id"])
    assert applied["status"] == "completed"
    assert second["estimated_after_tokens"] == applied["after_tokens"]
    assert second["summary_estimate_tokens"] == applied["summary_tokens"]
    assert CompressionRecord.objects.filter(conversation=thread).count() == 2


def test_a_provider_agents_preview_estimates_and_calls_no_model(client, user, stub_agent_with, openai_stub):
    from conversations.services import thread_create

    agent = stub_agent_with()
    thread = thread_create(user=user, agent_slug=agent.slug)
    seed_state(thread, generated_thread(5))
    client.force_login(user)
    calls = len(openai_stub.requests)

    body = _preview(client, thread)

    assert body["status"] == "ready" and body["estimate_exact"] is False
    low, high = body["estimated_after_range"]
    assert low <= body["estimated_after_tokens"] <= high
    assert len(openai_stub.requests) == calls  # no summary call: a provider is only called on apply
