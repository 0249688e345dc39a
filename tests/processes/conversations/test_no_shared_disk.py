"""Many machines, no shared disk: a web process (Daphne) and a Celery worker, each started in an empty
directory of its own, share only PostgreSQL, Redis and an S3 bucket (moto's server on loopback).

A run on the worker saves a large tool result and the conversation history in the bucket; the web
process serves both byte-exact; a manual compression through the web process appends to the history
file the worker wrote. Neither process leaves a file on its local disk.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from django.db import connection

from agent_platform.knowledge.models import KnowledgeBase
from agent_platform.knowledge.services import document_ingest
from agent_platform.services import api_token_issue
from tests.support.s3 import AWS_ENVIRONMENT

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[3]
CELERY = Path(sys.executable).with_name("celery")
START_SECONDS = 60
RUN_SECONDS = 120
LISTENING = re.compile(rb"Listening on TCP address 127\.0\.0\.1:(\d+)")
RUN_SUCCEEDED = re.compile(r"conversations\.run_execute\[[\w-]+\] succeeded")


@dataclass
class Machine:
    name: str
    home: Path  # the process's working directory and every local path it is given
    process: subprocess.Popen
    log: Path

    def files(self) -> list[Path]:
        return sorted(path for path in self.home.rglob("*") if path.is_file())

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]


def _test_database_url() -> str:
    db = connection.settings_dict  # pytest-django's test database, which both processes must share
    user = quote(db.get("USER") or "postgres")
    password = f":{quote(db['PASSWORD'])}" if db.get("PASSWORD") else ""
    host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{quote(db['NAME'])}"


def _start(name: str, command: list[str], *, root: Path, shared: dict[str, str]) -> Machine:
    home = root / name
    home.mkdir()
    log = root / f"{name}.log"  # outside the machine's directory, which must stay empty
    env = {
        **os.environ,
        **shared,
        "WORKDIR_ROOT": str(home / "workdirs"),
        "MEDIA_ROOT": str(home / "media"),
        "STATIC_ROOT": str(home / "static"),
        "CHECKPOINT_SQLITE_PATH": str(home / "checkpoints.sqlite3"),
        "TMPDIR": str(root / f"{name}-tmp"),
    }
    (root / f"{name}-tmp").mkdir()
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=home, env=env, stdout=sink, stderr=subprocess.STDOUT)
    return Machine(name=name, home=home, process=process, log=log)


def _stop(machines: list[Machine]) -> None:
    for machine in machines:  # all at once: a Celery warm shutdown takes seconds
        machine.process.send_signal(signal.SIGTERM)
    for machine in machines:
        try:
            machine.process.wait(30)
        except subprocess.TimeoutExpired:
            machine.process.kill()
            machine.process.wait(10)


@pytest.fixture
def machines(tmp_path, s3_server, s3_workdirs, settings) -> Iterator[dict]:
    queue = f"machines-{uuid.uuid4().hex[:10]}"
    shared = {
        "DJANGO_SETTINGS_MODULE": "config.settings",  # production settings, from the environment
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
        "DATABASE_URL": _test_database_url(),
        "REDIS_URL": os.environ["REDIS_URL"],
        "CELERY_BROKER_URL": os.environ["REDIS_URL"],
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "RUN_EXECUTION": "celery",
        "WORKDIR_STORAGE": "s3",
        "WORKDIR_S3_BUCKET": s3_server.bucket,
        "WORKDIR_S3_ENDPOINT_URL": s3_server.endpoint_url,
        "WORKDIR_S3_PREFIX": s3_workdirs,
        **AWS_ENVIRONMENT,
    }
    started: list[Machine] = []
    try:
        worker = _start(
            "worker",
            [str(CELERY), "-A", "config", "worker", "-Q", queue, "--pool=prefork", "-c", "1",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info", "-n", f"{queue}@%h"],
            root=tmp_path, shared=shared,
        )  # fmt: skip
        started.append(worker)
        web = _start(
            "web",
            [sys.executable, "-m", "daphne", "-e", "tcp:port=0:interface=127.0.0.1",
             "config.asgi:application"],
            root=tmp_path, shared=shared,
        )  # fmt: skip
        started.append(web)
        base_url = _wait_for_listening(web)
        _wait_for(lambda: b"ready." in worker.log.read_bytes(), worker, START_SECONDS)
        yield {"web": web, "worker": worker, "base_url": base_url, "prefix": s3_workdirs}
    finally:
        _stop(started)
        import redis

        redis.Redis.from_url(os.environ["REDIS_URL"]).delete(queue)


def _wait_for(condition, machine: Machine, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert machine.process.poll() is None, f"{machine.name} exited:\n{machine.log_text()}"
        assert time.monotonic() < deadline, f"{machine.name} not ready:\n{machine.log_text()}"
        time.sleep(0.2)


def _wait_for_listening(web: Machine) -> str:
    found: list[str] = []

    def listening() -> bool:
        match = LISTENING.search(web.log.read_bytes())
        if match:
            found.append(match.group(1).decode())
        return bool(match)

    _wait_for(listening, web, START_SECONDS)
    return f"http://127.0.0.1:{found[0]}"


def _log_in(http: httpx.Client, username: str, password: str) -> None:
    http.get("/accounts/login/").raise_for_status()
    response = http.post(
        "/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": http.cookies["csrftoken"]},
        headers={"Referer": f"{http.base_url}accounts/login/"},
    )
    assert response.status_code == 302, response.text[:500]


def _wait_for_run(http: httpx.Client, thread_id: str, machines: dict) -> dict:
    deadline = time.monotonic() + RUN_SECONDS
    while True:
        state = http.get(f"/api/threads/{thread_id}/state").raise_for_status().json()
        run = state["latest_run"]
        if run and run["status"] not in ("queued", "running"):
            return run
        for machine in (machines["web"], machines["worker"]):
            assert machine.process.poll() is None, f"{machine.name} exited:\n{machine.log_text()}"
        assert time.monotonic() < deadline, f"the run never finished:\n{machines['worker'].log_text()}"
        time.sleep(0.3)


@pytest.fixture
def refund_handbook(db):
    """A knowledge base whose answer to a refund question is far over the agent's tool-result limit."""
    kb = KnowledgeBase.objects.create(name="Policies", slug="policies")
    text = "\n\n".join(
        f"Refund rule {i}: a refund for order class {i} is paid within {i % 30 + 1} days of the return, "
        "once the goods are inspected and the receipt is checked. " * 3
        for i in range(120)
    )
    return document_ingest(kb=kb, title="Refund handbook", text=text, source="handbook.md")


def test_web_and_worker_with_no_shared_disk_see_the_same_workdir(
    machines, s3_server, settings, user, agent, refund_handbook
):
    # The web process runs the production settings: a password hash it can check.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    user.set_password("pw-alice-123")
    user.save()
    agent.summary_threshold = 1  # T = 1,024 tokens: every model call compacts, and summarizes what it can
    agent.summary_keep_messages = 2
    agent.summary_tool_result_token_limit = 100
    agent.save()
    _token, raw_token = api_token_issue(user=user)
    api = httpx.Client(
        base_url=machines["base_url"], headers={"Authorization": f"Bearer {raw_token}"}, timeout=30
    )
    browser = httpx.Client(base_url=machines["base_url"], timeout=30)
    _log_in(browser, "alice", "pw-alice-123")

    thread_id = api.post("/api/threads", json={"agent": agent.slug}).raise_for_status().json()["thread_id"]
    # Two runs on the worker: a knowledge question whose answer is offloaded, then a plain follow-up
    # whose automatic summary moves that exchange (with the receipt) into the history file.
    # The follow-up is long enough that, once the earlier summary and it are folded together, the new
    # summary is smaller than what it folds (issue 24: a compression never makes the request bigger).
    follow_up = (
        "thanks, that helps. " + "Refunds over 100 euros need a manager's approval and a receipt. " * 60
    )
    for content in ("search the knowledge base for refunds", follow_up):
        sent = api.post(f"/api/threads/{thread_id}/messages", json={"content": content})
        assert sent.status_code == 202, sent.text
        run = _wait_for_run(api, thread_id, machines)
        assert run["status"] == "succeeded", (run, machines["worker"].log_text())
    # The worker ran them: the web process (RUN_EXECUTION=celery) only queues.
    assert len(RUN_SUCCEEDED.findall(machines["worker"].log.read_text())) == 2

    # The worker saved the whole tool result under its SHA-256 name; the web process serves it.
    messages = api.get(f"/api/threads/{thread_id}/messages").raise_for_status().json()
    (tool_result,) = [m for m in messages if m["role"] == "tool"]
    assert tool_result["tool_name"] == "query_kb" and len(tool_result["content"]) > 5000
    digest = hashlib.sha256(tool_result["content"].encode()).hexdigest()
    saved_path = f"outputs/large_tool_results/query_kb-{digest[:16]}.txt"
    thread_prefix = f"{machines['prefix']}/{thread_id}/"
    keys = s3_server.keys(thread_prefix)
    assert thread_prefix + saved_path in keys, keys
    served = browser.get(f"/threads/{thread_id}/files/{saved_path}", params={"download": 1})
    assert served.status_code == 200, served.text[:500]
    assert served.headers["content-type"] == "text/plain; charset=utf-8"
    assert hashlib.sha256(served.content).hexdigest() == digest
    page = browser.get(f"/threads/{thread_id}/files/{saved_path}")
    assert page.status_code == 200 and digest in page.text  # the page shows the SHA-256 it read

    # The worker's automatic summary wrote the history file; the web process serves it too.
    (history_key,) = [key for key in keys if "/outputs/conversation_history/" in key]
    history_path = history_key.removeprefix(thread_prefix)
    worker_history = s3_server.get(history_key)["Body"].read()
    assert f"Full output path: {saved_path}".encode() in worker_history  # the receipt, not the output
    served = browser.get(f"/threads/{thread_id}/files/{history_path}", params={"download": 1})
    assert served.status_code == 200 and served.content == worker_history

    # A manual compression through the web process appends to the worker's history file. It keeps one
    # message, so it folds the earlier summary and the long follow-up.
    type(agent).objects.filter(pk=agent.pk).update(summary_keep_messages=1)
    compressed = api.post(f"/api/threads/{thread_id}/compress?wait=true")
    assert compressed.status_code == 200, compressed.text
    assert compressed.json()["status"] == "completed", str(compressed.json())
    assert compressed.json()["file_path"] == history_path
    history = browser.get(f"/threads/{thread_id}/files/{history_path}", params={"download": 1}).content
    assert history.startswith(worker_history) and len(history) > len(worker_history)
    assert s3_server.get(history_key)["Body"].read() == history

    # Every saved file is in the bucket; neither machine wrote one to its own disk.
    assert set(s3_server.keys(thread_prefix)) == {thread_prefix + saved_path, history_key}
    for machine in (machines["web"], machines["worker"]):
        assert machine.files() == [], machine.name
