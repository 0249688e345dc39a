"""Stop during a model call that has not streamed yet (the provider silent for 8 s, as a reasoning
model's first phase): through the API the run ends ``cancelled`` within a second of Stop, in-process
and on a Celery worker, and the request is closed, not waited out."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from agent_platform.models import ModelEndpoint
from conversations.models import AgentRun
from conversations.services import message_intake, run_cancel, thread_create
from tests.conversations.consistency import assert_transcript_equals_checkpoint
from tests.processes.support import celery_worker, tasks_sent_to

SILENT_SECONDS = 8  # the stub's wait before its first byte
STOP_WITHIN = 1.0


def _ended_after_stop(run: AgentRun, timeout: float = 30.0) -> float:
    """Seconds from now (Stop) until the run left ``running``."""
    stopped_at = time.monotonic()
    deadline = stopped_at + timeout
    while AgentRun.objects.filter(pk=run.pk, status="running").exists():
        assert time.monotonic() < deadline, "the run did not end after Stop"
        time.sleep(0.02)
    return time.monotonic() - stopped_at


def _wait_for(predicate, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def stub_agent(agent, openai_stub, monkeypatch):
    monkeypatch.setenv("STUB_API_KEY", "sk-test")
    agent.endpoint = ModelEndpoint.objects.create(
        name="stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY"
    )
    agent.model_name = "gpt-4o-mini"
    agent.save()
    return agent


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_stop_through_the_api_ends_an_in_process_run_waiting_on_a_silent_model_within_a_second(
    user, stub_agent, openai_stub, client, settings
):
    settings.RUN_EXECUTION = "inprocess"
    openai_stub.reply("an answer nobody reads", delay=SILENT_SECONDS)
    openai_stub.reply("the next message is answered")
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    client.force_login(user)
    base = f"/api/threads/{thread.thread_id}"
    response = client.post(f"{base}/messages", {"content": "think hard"}, content_type="application/json")
    assert response.status_code == 202, response.content
    run = AgentRun.objects.get(pk=response.json()["run"]["id"])
    _wait_for(lambda: bool(openai_stub.requests), "the model call")
    time.sleep(0.3)  # the call is out, nothing has come back
    assert client.post(f"{base}/runs/current/cancel").status_code == 202
    took = _ended_after_stop(run)
    connection.close()
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert took < STOP_WITHIN, f"the run ended {took:.2f} s after Stop"
    assert_transcript_equals_checkpoint(thread)
    # The thread goes on at once: the next message is answered by the next call.
    response = client.post(f"{base}/messages", {"content": "and now?"}, content_type="application/json")
    following = AgentRun.objects.get(pk=response.json()["run"]["id"])
    _wait_for(lambda: AgentRun.objects.get(pk=following.pk).status == "succeeded", "the next run", 20)
    assert len(openai_stub.requests) == 2


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_stop_ends_a_celery_run_waiting_on_a_silent_model_within_a_second(
    user, stub_agent, openai_stub, tmp_path, settings
):
    openai_stub.reply("an answer nobody reads", delay=SILENT_SECONDS)
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    settings.RUN_EXECUTION = "celery"
    with celery_worker(tmp_path, STUB_API_KEY="sk-test") as worker, tasks_sent_to(worker.queue):
        run = message_intake(thread_id=thread.thread_id, user=user, content="think hard").run
        _wait_for(lambda: bool(openai_stub.requests), "the model call")
        time.sleep(0.3)
        run_cancel(thread_id=thread.thread_id, user=user)
        took = _ended_after_stop(run)
        run.refresh_from_db()
        assert run.status == "cancelled", worker.text()[-3000:]
    assert took < STOP_WITHIN, f"the run ended {took:.2f} s after Stop"
    assert len(openai_stub.requests) == 1
