"""Issue 38: every request that pays for a model call is throttled on the user's send counters. Answers
to ``ask_user`` (the API's resume and the page's answer form) met no limit: 30 in 30 s were all
accepted. And the "at once" limit is atomic: 16 parallel sends meet it exactly on PostgreSQL."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
import time_machine
from django.core.cache import cache
from django.db import connection
from django.test import Client

from conversations.models import AgentRun

START = dt.datetime(2026, 3, 2, 9, 0, 0, tzinfo=dt.UTC)
LIMIT = 20  # THROTTLE_SEND_PER_MINUTE's default (the test settings turn the throttles off)


@pytest.fixture(autouse=True)
def _fresh_counters():
    cache.clear()
    yield
    cache.clear()


def _waiting_on_a_question(thread) -> None:
    """The thread's latest run asks the user (``ask_user``); runs before it have ended."""
    thread.runs.filter(status__in=AgentRun.ACTIVE_STATUSES).update(status=AgentRun.Status.SUCCEEDED)
    AgentRun.objects.create(conversation=thread, status=AgentRun.Status.INTERRUPTED)


def _api_answer(client, thread, n):
    return client.post(
        f"/api/threads/{thread.thread_id}/resume", {"answer": f"answer {n}"}, content_type="application/json"
    )


def _page_answer(client, thread, n):
    return client.post(
        f"/threads/{thread.thread_id}/answer",
        {"answer": f"answer {n}"},
        headers={"X-Requested-With": "fetch"},
    )


@pytest.mark.django_db
@pytest.mark.parametrize("answer", [_api_answer, _page_answer], ids=["api-resume", "page-answer-form"])
def test_thirty_answers_in_thirty_seconds_meet_429(client, user, thread, answer, settings):
    settings.THROTTLE_SEND_PER_MINUTE, settings.THROTTLE_SEND_CONCURRENT = LIMIT, 5
    client.force_login(user)
    statuses = []
    # The clock stands still: the window's offset is the user's (django-ratelimit staggers it), and 30
    # answers at one instant are 30 answers within 30 s wherever its boundary falls.
    with time_machine.travel(START, tick=False):
        for n in range(30):
            _waiting_on_a_question(thread)
            response = answer(client, thread, n)
            statuses.append(response.status_code)
            if response.status_code == 429:
                assert response["Retry-After"]
    assert statuses == [202] * LIMIT + [429] * (30 - LIMIT)
    assert thread.runs.filter(kind=AgentRun.Kind.RESUME).count() == LIMIT  # a refused answer queued nothing


@pytest.mark.django_db
def test_answers_sends_and_regenerations_share_one_counter(client, user, thread, settings):
    settings.THROTTLE_SEND_PER_MINUTE = 2
    client.force_login(user)
    with time_machine.travel(START, tick=False):
        _waiting_on_a_question(thread)
        assert _api_answer(client, thread, 1).status_code == 202
        thread.runs.update(status=AgentRun.Status.SUCCEEDED)
        send = client.post(
            f"/api/threads/{thread.thread_id}/messages", {"content": "hi"}, content_type="application/json"
        )
        assert send.status_code == 202
        thread.runs.update(status=AgentRun.Status.SUCCEEDED)
        refused = client.post(
            f"/api/threads/{thread.thread_id}/regenerate", {}, content_type="application/json"
        )
        assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_sixteen_parallel_sends_meet_the_concurrent_limit_exactly(user, agent, settings, monkeypatch):
    from conversations.services import thread_create

    settings.THROTTLE_SEND_CONCURRENT = 5
    settings.THROTTLE_SEND_PER_MINUTE = 100
    # Runs stay queued: each accepted send holds one of the user's five slots.
    monkeypatch.setattr("conversations.services.intake.run_dispatch_next", lambda **kwargs: None)
    threads = [thread_create(user=user, agent_slug=agent.slug) for _ in range(16)]
    start, statuses = threading.Barrier(16), []

    def send(thread) -> None:
        client = Client()
        client.force_login(user)
        start.wait()
        try:
            response = client.post(
                f"/api/threads/{thread.thread_id}/messages",
                {"content": "hi"},
                content_type="application/json",
            )
            statuses.append(response.status_code)
        finally:
            connection.close()

    workers = [threading.Thread(target=send, args=(thread,)) for thread in threads]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert sorted(statuses) == [202] * 5 + [429] * 11
    assert AgentRun.objects.filter(conversation__owner=user, status=AgentRun.Status.QUEUED).count() == 5
