"""Run throughput on the production path: 20 threads × 10 messages on PostgreSQL, two Celery workers
(one process each) and a local OpenAI-protocol stub; messages/s and p50/p95 from send to run finished.

Each thread's client sends a message, waits for its run to finish, then sends the next, all 20 at
once. A fresh database ``<DATABASE_URL's name>_bench`` is created, migrated and dropped.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/agents REDIS_URL=redis://127.0.0.1:6379/0 \
        python -m bench.throughput
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "throughput.md"  # its own page: `make bench` rewrites docs/benchmarks.md whole
SECTION = "# Run throughput"
THREADS, MESSAGES, WORKERS = 20, 10, 2
RUN_TIMEOUT_SECONDS = 300


def _bench_database(url: str) -> tuple[str, str, str]:
    """(bench database URL, its name, the URL of the server's maintenance database)."""
    parsed = urlparse(url)
    name = f"{parsed.path.lstrip('/')}_bench"
    return urlunparse(parsed._replace(path=f"/{name}")), name, urlunparse(parsed._replace(path="/postgres"))


def _psql(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def measure() -> dict[str, float | int]:
    base_url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not base_url.startswith("postgres") or not redis_url:
        sys.exit("bench.throughput needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    bench_url, bench_name, admin_url = _bench_database(base_url)
    _psql(admin_url, f'DROP DATABASE IF EXISTS "{bench_name}" WITH (FORCE)')
    _psql(admin_url, f'CREATE DATABASE "{bench_name}"')
    workdir = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": bench_url,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "WORKDIR_ROOT": str(workdir),
        "BENCH_API_KEY": "sk-bench",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    workers: list[subprocess.Popen] = []
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
        )
        import django

        django.setup()
        from django.contrib.auth import get_user_model

        from agent_platform.models import Agent, ModelEndpoint
        from conversations.models import AgentRun
        from conversations.services import message_intake, thread_create
        from tests.support.openai_stub import OpenAIStub

        stub = OpenAIStub().start()
        # The operator binds the key to the stub's origin, for the workers started below.
        env["MODEL_KEY_BINDINGS"] = f"BENCH_API_KEY={stub.origin}"
        for _ in range(THREADS * MESSAGES):
            stub.reply("A short answer from the stub.")
        user = get_user_model().objects.create_user("bench", password="bench-pw-123")
        endpoint = ModelEndpoint.objects.create(
            name="stub", base_url=stub.base_url, api_key_env="BENCH_API_KEY"
        )
        Agent.objects.create(
            name="Bench", slug="bench", endpoint=endpoint, model_name="gpt-4o-mini", tools=[]
        )
        threads = [thread_create(user=user, agent_slug="bench", title=f"bench {n}") for n in range(THREADS)]

        for n in range(WORKERS):
            workers.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "config",
                        "worker",
                        "-Q",
                        queue,
                        "--pool=prefork",
                        "-c",
                        "1",
                        "--without-gossip",
                        "--without-mingle",
                        "--without-heartbeat",
                        "-l",
                        "warning",
                        "-n",
                        f"{queue}-{n}@%h",
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )  # fmt: skip
            )
        time.sleep(5)  # the workers connect to the broker

        latencies: list[float] = []
        failures: list[str] = []
        lock = threading.Lock()

        def client(conversation) -> None:
            from django.db import connection

            try:
                for i in range(MESSAGES):
                    sent = time.monotonic()
                    run = message_intake(
                        thread_id=conversation.thread_id, user=user, content=f"message {i}"
                    ).run
                    while True:
                        status, error = (
                            AgentRun.objects.filter(pk=run.pk).values_list("status", "error").get()
                        )
                        if status in ("succeeded", "failed"):
                            break
                        if time.monotonic() - sent > RUN_TIMEOUT_SECONDS:
                            status, error = "timeout", "no result"
                            break
                        time.sleep(0.02)
                    with lock:
                        latencies.append(time.monotonic() - sent)
                        if status != "succeeded":
                            failures.append(f"{status}: {error}")
            finally:
                connection.close()

        started = time.monotonic()
        clients = [threading.Thread(target=client, args=(t,)) for t in threads]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join()
        wall = time.monotonic() - started
        stub.stop()
        return {
            "messages": len(latencies),
            "failed": len(failures),
            "wall_s": wall,
            "messages_per_s": len(latencies) / wall,
            "p50_s": statistics.median(latencies),
            "p95_s": _percentile(latencies, 0.95),
            "load": os.getloadavg()[1],  # 5-minute average: how busy the machine was meanwhile
            "cores": os.cpu_count() or 0,
        }
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
        from django.db import connections

        connections.close_all()
        from agent_platform.runtime.checkpointer import checkpointer_close

        checkpointer_close()
        _psql(admin_url, f'DROP DATABASE IF EXISTS "{bench_name}" WITH (FORCE)')


def markdown(row: dict[str, float | int]) -> str:
    return (
        f"{SECTION}\n\n"
        f"{THREADS} threads × {MESSAGES} messages sent at once (each thread waits for its run before the next "
        f"message), PostgreSQL, {WORKERS} Celery workers of one process each, a local OpenAI-protocol stub "
        f"(`python -m bench.throughput`). Latency is from the send to the run's end. Measured on "
        f"{row['cores']} cores at a load average of {row['load']:.1f}.\n\n"
        "| messages | failed | wall | messages/s | p50 | p95 |\n|---|---|---|---|---|---|\n"
        f"| {row['messages']} | {row['failed']} | {row['wall_s']:.1f} s | {row['messages_per_s']:.2f} | "
        f"{row['p50_s']:.2f} s | {row['p95_s']:.2f} s |\n"
    )


def main() -> None:
    table = markdown(measure())
    print(table)
    DOC.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
