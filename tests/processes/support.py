"""Real processes for tests that need them: a Celery worker and Daphne servers on the test database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
CELERY = Path(sys.executable).with_name("celery")


def shared_database_url() -> str:
    """pytest-django's test database as a DATABASE_URL, for a child process that must share it."""
    db = connection.settings_dict
    user = quote(db.get("USER") or "postgres")
    password = f":{quote(db['PASSWORD'])}" if db.get("PASSWORD") else ""
    host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{quote(db['NAME'])}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def service_env(**extra: str) -> dict[str, str]:
    """The environment of a child process on the test database, Redis and test settings."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.test_settings",
        "DATABASE_URL": shared_database_url(),
        "REDIS_URL": os.environ.get("REDIS_URL", ""),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,  # where this process sends the tasks
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def _stop(process: subprocess.Popen, *, grace: float = 30) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


@dataclass
class Worker:
    queue: str
    log: Path
    process: subprocess.Popen

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def celery_worker(log_dir: Path, *, concurrency: int = 1, **env: str) -> Iterator[Worker]:
    """A prefork Celery worker on a queue of its own; stopped (warm, then killed) when the block ends."""
    queue = f"test-{uuid.uuid4().hex[:10]}"
    log = log_dir / f"worker-{queue}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(CELERY), "-A", "config", "worker", "-Q", queue, "--pool=prefork",
             "-c", str(concurrency), "--without-gossip", "--without-mingle", "--without-heartbeat",
             "-l", "info", "-n", f"{queue}@%h"],
            cwd=ROOT, env=service_env(CELERY_TASK_DEFAULT_QUEUE=queue, **env), stdout=sink,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    worker = Worker(queue=queue, log=log, process=process)
    try:
        deadline = time.monotonic() + 60
        while "ready." not in worker.text():
            assert process.poll() is None and time.monotonic() < deadline, worker.text()[-4000:]
            time.sleep(0.2)
        yield worker
    finally:
        _stop(process)
        import redis

        redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(queue)


@contextmanager
def daphne_server(log_dir: Path, *, env: dict[str, str], name: str = "web") -> Iterator[str]:
    """A Daphne process serving the project's ASGI application in ``env``; yields its base URL."""
    port = free_port()
    log = log_dir / f"daphne-{name}-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
            cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base_url}/accounts/login/", timeout=1)
                break
            except httpx.HTTPError:
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
                time.sleep(0.2)
        yield base_url
    finally:
        _stop(process, grace=10)


@contextmanager
def tasks_sent_to(queue: str) -> Iterator[None]:
    """Tasks this process sends without a queue go to ``queue`` (a test's own worker) in the block."""
    from config.celery import app

    previous = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    try:
        yield
    finally:
        app.conf.task_default_queue = previous
