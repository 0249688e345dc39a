"""Faults under load (issue 41, done-when): 48 messages from 4 clients into 8 threads through a Daphne
server's API, executed by a Celery worker, while the Redis that the server and the worker share (a
server of this test's own, never the machine's) is killed for 6 s and the worker's database connections
are killed twice with ``pg_terminate_backend`` during model calls. No run fails, no response is a 500,
every message is answered once, and in every thread the transcript equals the checkpoint, the user's
messages in both."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import psycopg
import pytest
import redis
from django.db import connection
from langchain_core.messages import HumanMessage

from agent_platform.models import Agent, ModelEndpoint
from agent_platform.runtime.checkpointer import postgres_conninfo
from agent_platform.services import api_token_issue
from conversations.models import AgentRun, Message
from conversations.services import thread_create
from tests.compression._threads import repository_for
from tests.conversations.consistency import assert_transcript_equals_checkpoint
from tests.processes.support import celery_worker, daphne_server, free_port, service_env
from tests.support.openai_stub import OpenAIStub, ScriptedReply

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

CLIENTS, THREADS_PER_CLIENT, MESSAGES_PER_THREAD = 4, 2, 6  # 48 messages
REDIS_DOWN_SECONDS = 6.0
REDIS_DOWN_AT_REQUEST, KILL_DB_AT_REQUESTS = 6, (16, 32)  # the model call during which each fault lands
WORKER_APP = "faults-worker"  # PGAPPNAME of the worker's connections (Django's and the checkpointer's)
THREAD_DEADLINE_SECONDS = 120
KILL_WORKER = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE datname = current_database() AND application_name = %s"
)


class OwnRedis:
    """A Redis server on a spare port, without persistence: killed, it comes back empty."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.log = log
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        command = [shutil.which("redis-server") or "redis-server", "--port", str(self.port)]
        command += ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=0.5).ping()
                return
            except redis.ConnectionError:
                assert self.process.poll() is None and time.monotonic() < deadline, self.log.read_text()
                time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


class Faults:
    """Injected from the model's answers, so each lands while runs are in flight: Redis killed (and
    started again ``REDIS_DOWN_SECONDS`` later) at one model call, the worker's connections killed at two."""

    def __init__(self, own_redis: OwnRedis) -> None:
        self.redis = own_redis
        self.requests = 0
        self.killed: list[int] = []
        self.redis_outage: threading.Thread | None = None

    def answer(self, body: dict) -> ScriptedReply:
        self.requests += 1  # (under the stub's lock)
        if self.requests == REDIS_DOWN_AT_REQUEST:
            self.redis_outage = threading.Thread(target=self._redis_down, name="redis-outage")
            self.redis_outage.start()
        if self.requests in KILL_DB_AT_REQUESTS:
            with psycopg.connect(postgres_conninfo(), autocommit=True) as killer:
                self.killed.append(killer.execute(KILL_WORKER, (WORKER_APP,)).fetchone()[0])
        said = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        return ScriptedReply(content=f"answer to {said}", delay=0.2)

    def _redis_down(self) -> None:
        self.redis.kill()
        time.sleep(REDIS_DOWN_SECONDS)
        self.redis.start()


def _client(
    base_url: str, raw_token: str, thread_ids: list[str], statuses: Counter, errors: list[str]
) -> None:
    """One user's client: each message to each of its threads after the thread's previous run ended;
    ``/state`` read meanwhile. Every status code is counted, every unexpected answer kept."""
    api = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {raw_token}"}, timeout=30)
    try:
        for n in range(MESSAGES_PER_THREAD):
            for thread_id in thread_ids:
                sent = api.post(f"/api/threads/{thread_id}/messages", json={"content": f"{thread_id} #{n}"})
                statuses[sent.status_code] += 1
                if sent.status_code != 202:
                    errors.append(f"send {thread_id} #{n}: {sent.status_code} {sent.text[:300]}")
            for thread_id in thread_ids:
                _wait_idle(api, thread_id, statuses, errors)
    except Exception as exc:  # noqa: BLE001 - kept for the assertion, never a silent client
        errors.append(f"client: {exc.__class__.__name__}: {exc}")
    finally:
        api.close()


def _wait_idle(api: httpx.Client, thread_id: str, statuses: Counter, errors: list[str]) -> None:
    deadline = time.monotonic() + THREAD_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        state = api.get(f"/api/threads/{thread_id}/state")
        statuses[state.status_code] += 1
        if state.status_code != 200:
            errors.append(f"state {thread_id}: {state.status_code} {state.text[:300]}")
        elif not state.json()["running"] and not state.json()["queued"]:
            return
        time.sleep(0.25)
    errors.append(f"{thread_id}: still running or queued after {THREAD_DEADLINE_SECONDS} s")


def test_a_redis_outage_and_killed_database_connections_during_a_48_message_load(django_user_model, tmp_path):
    own_redis = OwnRedis(tmp_path / "redis.log")
    own_redis.start()
    faults = Faults(own_redis)
    stub = OpenAIStub().start()
    stub.responder = faults.answer
    try:
        endpoint = ModelEndpoint.objects.create(name="stub", base_url=stub.base_url)
        agent = Agent.objects.create(
            name="Faults", slug="faults", endpoint=endpoint, model_name="gpt-4o-mini"
        )
        clients: list[tuple[str, list[str]]] = []
        threads = []
        for c in range(CLIENTS):
            user = django_user_model.objects.create_user(f"client{c}", password="pw-client-123")
            mine = [
                thread_create(user=user, agent_slug=agent.slug, title=f"t{c}.{t}")
                for t in range(THREADS_PER_CLIENT)
            ]
            threads += mine
            clients.append((api_token_issue(user=user)[1], [str(t.thread_id) for t in mine]))
        connection.close()  # (the killer never meets this process's connections: they are not the worker's)

        production = {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "WORKDIR_ROOT": str(tmp_path / "workdirs"),
            "REDIS_URL": own_redis.url,
            "CELERY_BROKER_URL": own_redis.url,
            "REDIS_RETRY_SECONDS": "0.5",
            "LIVE_EVENT_RETRY_SECONDS": "2",
            "RUN_LEASE_SECONDS": "6",  # a start the dead broker lost is sent again within a lease or two
            "RUN_DB_RETRY_SECONDS": "0.2",
            "THROTTLE_SEND_PER_MINUTE": "1000",
            "THROTTLE_SEND_CONCURRENT": "100",
        }
        with celery_worker(tmp_path, concurrency=2, PGAPPNAME=WORKER_APP, **production) as worker:
            env = service_env(CELERY_TASK_DEFAULT_QUEUE=worker.queue, PGAPPNAME="faults-web", **production)
            with daphne_server(tmp_path, env=env) as base_url:
                statuses: Counter = Counter()
                errors: list[str] = []
                running = [
                    threading.Thread(target=_client, args=(base_url, raw, ids, statuses, errors))
                    for raw, ids in clients
                ]
                for client in running:
                    client.start()
                for client in running:
                    client.join()
                if faults.redis_outage is not None:
                    faults.redis_outage.join()
            log = worker.text()
    finally:
        stub.stop()
        own_redis.kill()

    context = f"{errors[:10]}\n{statuses}\n{log[-3000:]}"
    assert faults.redis_outage is not None and len(faults.killed) == 2, context
    assert all(killed >= 1 for killed in faults.killed), (faults.killed, context)  # the worker's, at least
    assert not errors and statuses[500] == 0, context
    runs = AgentRun.objects.filter(conversation__in=threads)
    assert Counter(runs.values_list("status", flat=True)) == {"succeeded": 48}, [
        (run.status, run.error) for run in runs.exclude(status="succeeded")
    ]
    for thread in threads:
        transcript = assert_transcript_equals_checkpoint(thread)
        said = list(
            Message.objects.filter(conversation=thread, role=Message.Role.USER)
            .order_by("seq")
            .values_list("lc_message_id", "content")
        )
        assert [text for _id, text in transcript] == [f"answer to {content}" for _id, content in said]
        held = [m.id for m in repository_for(thread).get_values()["messages"] if isinstance(m, HumanMessage)]
        assert held == [lc_id for lc_id, _content in said] and len(said) == MESSAGES_PER_THREAD
    connection.close()
