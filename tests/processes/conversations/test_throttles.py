"""Per-user throttles on message sends, uploads and compressions: attempts a minute and work at once,
answered 429 ``rate_limited`` with ``Retry-After`` (JSON on the API, words on the pages). The clock is
frozen and moved by hand (time-machine): no sleeps."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest
import time_machine
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import RequestFactory

from agent_platform.throttle import COMPRESS, SEND, UPLOAD, RateLimited, throttled
from conversations.models import AgentRun

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]
# A minute boundary is hit within the window for some users (the window is staggered per key): the
# tests start at a fixed instant and compute what they expect from the first answer's Retry-After.
START = dt.datetime(2026, 3, 2, 9, 0, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _fresh_counters():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def clock():
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


def _send(client, thread, text: str = "hello", **headers):
    return client.post(
        f"/api/threads/{thread.thread_id}/messages",
        {"content": text},
        content_type="application/json",
        **headers,
    )


def test_sends_over_the_minute_limit_answer_429_with_retry_after_until_the_window_passes(
    client, user, thread, settings, clock
):
    settings.THROTTLE_SEND_PER_MINUTE = 3
    client.force_login(user)
    assert [_send(client, thread, f"m{n}").status_code for n in range(3)] == [202, 202, 202]

    refused = _send(client, thread, "one too many")
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "rate_limited" and "3 a minute" in body["message"]
    retry_after = int(refused["Retry-After"])
    assert 1 <= retry_after <= 60 and body["retry_after"] == retry_after

    clock.shift(retry_after - 1)
    assert _send(client, thread).status_code == 429  # a second early: still the same window
    clock.shift(1)
    assert _send(client, thread, "after the wait").status_code == 202
    assert thread.messages.filter(content="one too many").count() == 0


def test_the_limit_is_per_user(client, user, other_user, agent, thread, settings, clock):
    from conversations.services import thread_create

    settings.THROTTLE_SEND_PER_MINUTE = 1
    client.force_login(user)
    assert _send(client, thread).status_code == 202
    assert _send(client, thread).status_code == 429
    client.force_login(other_user)
    their_thread = thread_create(user=other_user, agent_slug=agent.slug)
    assert _send(client, their_thread).status_code == 202


def test_a_bearer_token_client_is_throttled_too(client, thread, settings, bearer, clock):
    settings.THROTTLE_SEND_PER_MINUTE = 1
    assert _send(client, thread, headers=bearer).status_code == 202
    refused = _send(client, thread, headers=bearer)
    assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"


def test_sends_beyond_the_runs_at_once_answer_429(client, user, agent, thread, settings, clock):
    from conversations.services import thread_create

    settings.THROTTLE_SEND_CONCURRENT = 2
    other_thread = thread_create(user=user, agent_slug=agent.slug)
    AgentRun.objects.create(conversation=thread, status=AgentRun.Status.RUNNING)
    queued = AgentRun.objects.create(conversation=other_thread, status=AgentRun.Status.QUEUED)
    client.force_login(user)

    refused = _send(client, thread)
    assert refused.status_code == 429
    assert "at most 2" in refused.json()["message"] and refused["Retry-After"] == "5"

    queued.status = AgentRun.Status.SUCCEEDED
    queued.save()
    assert _send(client, thread).status_code == 202


def test_the_page_shows_the_429_in_words_in_the_users_language(client, user, thread, settings, clock):
    settings.THROTTLE_SEND_PER_MINUTE = 1
    client.force_login(user)
    url = f"/threads/{thread.thread_id}/messages"
    fetch = {"X-Requested-With": "fetch"}
    assert client.post(url, {"content": "first"}, headers=fetch).status_code == 202

    refused = client.post(url, {"content": "second"}, headers=fetch)
    assert refused.status_code == 429 and refused["Retry-After"]
    assert refused.content.decode().startswith("Too many messages: at most 1 a minute. Try again in")

    client.cookies["django_language"] = "zh-hans"
    refused = client.post(url, {"content": "third"}, headers=fetch)
    assert refused.status_code == 429
    text = refused.content.decode()
    assert "消息" in text and "Too many" not in text


def test_uploads_have_their_own_minute_limit(client, user, thread, settings, clock):
    settings.THROTTLE_UPLOAD_PER_MINUTE = 1
    client.force_login(user)
    url = f"/api/threads/{thread.thread_id}/messages/upload"

    def upload(name: str):
        return client.post(url, {"files": [SimpleUploadedFile(name, b"some notes\n")], "content": name})

    assert upload("a.md").status_code == 202
    refused = upload("b.md")
    assert refused.status_code == 429 and "uploads" in refused.json()["message"]
    assert _send(client, thread, "text alone is no upload").status_code == 202


def test_an_upload_in_flight_holds_its_slot_until_it_ends(client, user, thread, settings, clock):
    settings.THROTTLE_UPLOAD_CONCURRENT = 1
    client.force_login(user)
    other_request = RequestFactory().post("/")
    other_request.user = user
    url = f"/api/threads/{thread.thread_id}/messages/upload"
    with throttled(other_request, UPLOAD):  # another upload of the same user, still being saved
        refused = client.post(url, {"files": [SimpleUploadedFile("a.md", b"x\n")]})
        assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"
    assert client.post(url, {"files": [SimpleUploadedFile("a.md", b"x\n")]}).status_code == 202


def test_compressions_are_limited_a_minute_and_at_once(client, user, thread, settings, clock):
    settings.THROTTLE_COMPRESS_PER_MINUTE = 2
    settings.THROTTLE_COMPRESS_CONCURRENT = 1
    client.force_login(user)
    url = f"/api/threads/{thread.thread_id}/compress?wait=true"
    other_request = RequestFactory().post("/")
    other_request.user = user
    with throttled(other_request, COMPRESS):  # a compression of the same user still running
        refused = client.post(url)
        assert refused.status_code == 429 and "at once" in refused.json()["message"]

    assert client.post(url).status_code == 200  # a short thread: no_op, but it was an attempt
    refused = client.post(url)
    assert refused.status_code == 429 and "compressions" in refused.json()["message"]
    clock.shift(int(refused["Retry-After"]))
    assert client.post(url).status_code == 200


def test_a_refused_in_flight_attempt_gives_its_slot_back(user, settings, clock):
    settings.THROTTLE_UPLOAD_CONCURRENT = 1
    request = RequestFactory().post("/")
    request.user = user
    with throttled(request, UPLOAD):
        with pytest.raises(RateLimited):
            with throttled(request, UPLOAD):
                pass
    with throttled(request, UPLOAD):  # both slots released: the first and the refused one
        pass


@pytest.mark.redis
def test_the_minute_and_in_flight_counts_are_shared_by_processes_through_redis(user, settings):
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/12")
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,  # as config.settings builds it from REDIS_URL in the other process
        }
    }
    settings.THROTTLE_SEND_PER_MINUTE = 2
    from django.core.cache import caches

    caches["default"].clear()
    request = RequestFactory().post("/")
    request.user = user
    with time_machine.travel(START, tick=False), throttled(request, SEND), throttled(request, SEND):
        pass
    settings.THROTTLE_UPLOAD_CONCURRENT = 1
    with throttled(request, UPLOAD):  # held here while the other process tries
        assert _other_process(redis_url, user.pk, UPLOAD).startswith("refused")
    assert _other_process(redis_url, user.pk, UPLOAD).startswith("admitted")  # given back
    # A third attempt from another process, at the same instant and with the same cache, is refused.
    assert _other_process(redis_url, user.pk, SEND).startswith("refused")
    caches["default"].clear()


def _other_process(redis_url: str, user_id: int, action: str) -> str:
    """One ``action`` of user ``user_id`` attempted by another Python process on the same Redis."""
    code = (
        "import django; django.setup()\n"
        "import time_machine\n"
        f"time_machine.travel('{START.isoformat()}', tick=False).start()\n"
        "from types import SimpleNamespace\n"
        "from django.test import RequestFactory\n"
        "from agent_platform.throttle import SEND, RateLimited, throttled\n"
        f"request = RequestFactory().post('/'); request.user = SimpleNamespace(pk={user_id})\n"
        "try:\n"
        f"    with throttled(request, {action!r}): print('admitted')\n"
        "except RateLimited as exc: print('refused', exc.retry_after)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "REDIS_URL": redis_url,
            "THROTTLE_SEND_PER_MINUTE": "2",
            "THROTTLE_UPLOAD_CONCURRENT": "1",
            "DATABASE_URL": "sqlite:////tmp/throttle-check.sqlite3",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
