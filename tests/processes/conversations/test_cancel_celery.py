"""Stop on the Celery path: a run executing in a real worker process (PostgreSQL, Redis broker, an
OpenAI-protocol server streaming slowly) sees the request in the database, ends ``cancelled`` with
its partial reply kept, and the worker then runs the queued message."""

from __future__ import annotations

import time

import pytest

from conversations.models import AgentRun, Message
from conversations.services import message_intake, run_cancel
from tests.processes.compression.test_bulk_celery import celery_worker  # noqa: F401 - a fixture

WAIT_SECONDS = 90


def _wait_until(predicate, worker, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not predicate():
        assert worker["process"].poll() is None, worker["log"].read_text()[-4000:]
        assert time.monotonic() < deadline, (
            f"timed out waiting for {what}:\n" + worker["log"].read_text()[-4000:]
        )
        time.sleep(0.2)


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_stop_reaches_a_run_on_a_celery_worker_and_the_queue_goes_on(
    thread,
    user,
    agent,
    openai_stub,
    settings,
    monkeypatch,
    celery_worker,  # noqa: F811
):
    from agent_platform.models import ModelEndpoint
    from conversations.tasks import run_execute_task

    agent.endpoint = ModelEndpoint.objects.create(name="stub", base_url=openai_stub.base_url)
    agent.model_name = "gpt-4o-mini"
    agent.save()
    openai_stub.reply(" ".join(f"word{i}" for i in range(200)), word_delay=0.1)
    openai_stub.reply("the queued message is answered")
    settings.RUN_EXECUTION = "celery"
    monkeypatch.setattr(
        run_execute_task,
        "delay",
        lambda run_id: run_execute_task.apply_async(args=[run_id], queue=celery_worker["queue"]),
    )

    first = message_intake(thread_id=thread.thread_id, user=user, content="talk for a long time")
    _wait_until(
        lambda: AgentRun.objects.get(pk=first.run.pk).status == "running", celery_worker, "the run to start"
    )
    _wait_until(lambda: bool(openai_stub.requests), celery_worker, "the model call")
    time.sleep(1.5)  # some words streamed
    second = message_intake(thread_id=thread.thread_id, user=user, content="and then this")
    run_cancel(thread_id=thread.thread_id, user=user)

    _wait_until(
        lambda: not AgentRun.objects.filter(conversation=thread, status__in=["queued", "running"]).exists(),
        celery_worker,
        "both runs to end",
    )
    first.run.refresh_from_db()
    second.run.refresh_from_db()
    assert (first.run.status, second.run.status) == ("cancelled", "succeeded")
    partial = Message.objects.get(run=first.run, role="assistant")
    assert partial.interrupted is True
    assert partial.content.startswith("word0 word1")
    assert "word199" not in partial.content
    # The model's next request carried the partial reply, then the queued message, and nothing dangling.
    last_request = openai_stub.requests[-1]["messages"]
    assert [m["role"] for m in last_request[-3:]] == ["user", "assistant", "user"]
    assert last_request[-2]["content"] == partial.content
    assert Message.objects.filter(run=second.run, role="assistant").get().content == (
        "the queued message is answered"
    )
