"""Issue 7's benchmark: bulk compaction on PostgreSQL. (a) Candidate selection over 10,000 threads from
the indexed pressure columns (time per filter combination, and the plan PostgreSQL uses); (b) compaction
throughput with the offline model, ``compact_threads`` synchronous vs ``--async`` on two Celery workers.

A throwaway database (``bench_bulk``, dropped and created with ``dropdb``/``createdb``) is migrated and
seeded. The work runs in a child process (``python -m bench.bulk --rows``) because Django can be set up
once per process and ``make bench`` runs other database benchmarks in the same one. The Celery part needs
Redis (``REDIS_URL``, default ``redis://127.0.0.1:6379/0``); without it that row says so.

    python -m bench.bulk
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

from bench.common import markdown_table, num

# The bench compacts every thread of its agent, whatever the command's safe defaults select.
EVERY_THREAD = ("--min-pressure", "any", "--idle-for", "any")

ROOT = Path(__file__).resolve().parents[1]
DB_NAME = os.environ.get("BENCH_BULK_DB", "bench_bulk")  # overridable: checkouts side by side
PG_HOST, PG_PORT, PG_USER = "127.0.0.1", "5432", "postgres"
REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
THREADS = 10_000
OWNERS, AGENTS = 50, 5
SELECTION_REPEAT = 7
COMPACT_THREADS = 200
COMPACT_MESSAGES = 40  # real trajectory messages per thread
KEEP_MESSAGES = 10
WORKER_COUNTS = (1, 2)
WORKER_TIMEOUT_S = 120

# (label, compression_candidates keyword arguments); the agent and owner are filled in at run time.
SELECTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--min-pressure 0.85 --limit 100", {"min_pressure": 0.85, "limit": 100}),
    ("--min-pressure 0.85 --idle-for 2h --limit 100", {"min_pressure": 0.85, "idle_for": "2h", "limit": 100}),
    ("--min-pressure 0.95 --idle-for 7d", {"min_pressure": 0.95, "idle_for": "7d"}),
    ("--agent A --min-pressure 0.85", {"agent_slug": "A", "min_pressure": 0.85}),
    ("--owner U --limit 50", {"owner": "U", "limit": 50}),
    ("--idle-for 2h --limit 100", {"idle_for": "2h", "limit": 100}),
    ("--min-pressure 0.85 (all matches)", {"min_pressure": 0.85}),
    ("(no filter, all 10,000)", {}),
)
HEADLINE_SELECTION = SELECTIONS[0][0]


# --- database and Django (child process) -------------------------------------------------------------


def _pg(cmd: str, *args: str) -> None:
    subprocess.run(
        [cmd, "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, *args, DB_NAME], check=True, capture_output=True
    )


def _env(tmp: str) -> dict[str, str]:
    return {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"postgres://{PG_USER}@{PG_HOST}:{PG_PORT}/{DB_NAME}",
        "REDIS_URL": REDIS_URL,
        "CELERY_BROKER_URL": REDIS_URL,
        "RUN_EXECUTION": "celery",  # nothing here starts runs; keep the in-process executor out of it
        "WORKDIR_ROOT": os.path.join(tmp, "workdirs"),
        "CHECKPOINT_SQLITE_PATH": os.path.join(tmp, "checkpoints.sqlite3"),
        "MEDIA_ROOT": os.path.join(tmp, "media"),
        "DEBUG": "false",  # no query log, as in production
        "LOG_LEVEL": "WARNING",
    }


def _setup_django(tmp: str) -> None:
    os.environ.update(_env(tmp))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def _redis_up() -> bool:
    host, port = re.match(r"redis://([^:/]+):?(\d+)?", REDIS_URL).groups()  # type: ignore[union-attr]
    try:
        with socket.create_connection((host, int(port or 6379)), timeout=0.5):
            return True
    except OSError:
        return False


# --- (a) candidate selection -------------------------------------------------------------------------


def _seed_population(rng: random.Random) -> dict[str, str]:
    """10,000 threads with random pressure/idle figures (10% never measured) and one run each."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from agent_platform.models import Agent
    from conversations.models import AgentRun, Conversation

    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"owner-{i}") for i in range(OWNERS)]
    )
    agents = Agent.objects.bulk_create([Agent(name=f"Agent {i}", slug=f"agent-{i}") for i in range(AGENTS)])
    now = timezone.now()
    conversations = []
    for _ in range(THREADS):
        pressure = None if rng.random() < 0.1 else round(rng.uniform(0.0, 1.2), 4)
        conversations.append(
            Conversation(
                owner=rng.choice(users),
                agent=rng.choice(agents),
                title="bench",
                pressure_ratio=pressure,
                context_tokens=None if pressure is None else int(pressure * 100_000),
                trigger_tokens=100_000,
            )
        )
    conversations = Conversation.objects.bulk_create(conversations, batch_size=2000)
    for c in conversations:  # auto_now_add set it on create: spread activity over the last 30 days
        c.last_activity_at = now - timedelta(seconds=rng.uniform(0, 30 * 86_400))
    Conversation.objects.bulk_update(conversations, ["last_activity_at"], batch_size=2000)
    statuses = (
        [AgentRun.Status.SUCCEEDED] * 95 + [AgentRun.Status.RUNNING] * 3 + [AgentRun.Status.INTERRUPTED] * 2
    )
    AgentRun.objects.bulk_create(
        [AgentRun(conversation=c, status=rng.choice(statuses)) for c in conversations], batch_size=2000
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"A": agents[0].slug, "U": users[0].username}


_SCAN = re.compile(
    r"(Index Only Scan(?: Backward)? using \S+|Index Scan(?: Backward)? using \S+|Bitmap Index Scan on \S+"
    r"|Seq Scan on \S+)"
)


def _plan_summary(plan: str) -> str:
    """The access paths of the plan, in order, deduplicated (``conversations_conversation_`` shortened)."""
    seen: list[str] = []
    for match in _SCAN.findall(plan):
        step = match.replace("conversations_conversation_", "conv_").replace(
            "conversations_agentrun", "agentrun"
        )
        if step not in seen:
            seen.append(step)
    return "; ".join(seen)


def _selection(names: dict[str, str]) -> list[dict]:
    from compression.management.commands.compact_threads import parse_duration
    from compression.selectors import compression_candidates

    rows = []
    for label, raw in SELECTIONS:
        kwargs = {k: names.get(v, v) if isinstance(v, str) else v for k, v in raw.items()}
        if "idle_for" in kwargs:
            kwargs["idle_for"] = parse_duration(kwargs["idle_for"])
        times, count = [], 0
        for _ in range(SELECTION_REPEAT):
            start = time.perf_counter()
            count = len(list(compression_candidates(**kwargs)))
            times.append(time.perf_counter() - start)
        queryset = compression_candidates(**kwargs)
        rows.append(
            {
                "part": "selection",
                "filters": label,
                "threads": THREADS,
                "selected": count,
                "median_ms": statistics.median(times) * 1e3,
                "best_ms": min(times) * 1e3,
                "plan": _plan_summary(queryset.explain()),
                "explain": queryset.explain(analyze=True) if label == HEADLINE_SELECTION else "",
            }
        )
    return rows


# --- (b) compaction throughput -----------------------------------------------------------------------


def _seed_compactable(slug: str, count: int) -> list:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from agent_platform.models import Agent
    from agent_platform.runtime.graph import state_repository_for
    from bench.overhead import real_state
    from conversations.models import Conversation
    from conversations.services import thread_create

    user, _ = get_user_model().objects.get_or_create(username="bench-bulk")
    agent = Agent.objects.create(name=slug, slug=slug, summary_keep_messages=KEEP_MESSAGES)
    messages = real_state(COMPACT_MESSAGES)
    threads = []
    for _ in range(count):
        conversation = thread_create(user=user, agent_slug=agent.slug, title="bench bulk")
        state_repository_for(conversation).update({"messages": messages})
        threads.append(conversation.pk)
    Conversation.objects.filter(pk__in=threads).update(
        pressure_ratio=0.95, last_activity_at=timezone.now() - timedelta(hours=3)
    )
    return threads


def _checkpoint_read_ms(ids: list[int]) -> float:
    """Median time to open one thread's checkpoint: what selecting by reading checkpoints would pay."""
    from agent_platform.runtime.graph import state_repository_for
    from conversations.models import Conversation

    times = []
    for conversation in Conversation.objects.filter(pk__in=ids[:50]).select_related("agent"):
        start = time.perf_counter()
        state_repository_for(conversation).get_values()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _compact_sync(slug: str) -> tuple[float, dict]:
    from django.core.management import call_command

    out = StringIO()
    start = time.perf_counter()
    call_command("compact_threads", "--agent", slug, *EVERY_THREAD, "--json", stdout=out, stderr=StringIO())
    return time.perf_counter() - start, json.loads(out.getvalue())


def _start_workers(tmp: str, queue: str, count: int) -> list[tuple[subprocess.Popen, Path]]:
    env = {**os.environ, **_env(tmp)}
    workers = []
    for n in range(count):
        log = Path(tmp) / f"worker-{n}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [str(Path(sys.executable).with_name("celery")), "-A", "config", "worker", "-Q", queue,
                 "--pool=solo", "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info",
                 "-n", f"bench{n}-{queue}@%h"],
                cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
            )  # fmt: skip
        workers.append((process, log))
    deadline = time.monotonic() + 60
    while not all(" ready." in log.read_text(errors="replace") for _, log in workers):
        if time.monotonic() > deadline or any(p.poll() is not None for p, _ in workers):
            raise RuntimeError(
                "Celery workers did not start: " + workers[0][1].read_text(errors="replace")[-2000:]
            )
        time.sleep(0.1)
    return workers


def _stop_workers(workers, queue: str) -> None:
    for process, _ in workers:
        process.send_signal(signal.SIGTERM)
    for process, _ in workers:
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
    import redis

    redis.Redis.from_url(REDIS_URL).delete(queue)


_TASK_SECONDS = re.compile(r"thread_compact\[[^\]]+\] succeeded in ([0-9.]+)s")


def _task_ms(workers) -> list[float]:
    """Each task's run time as its worker logged it."""
    return [
        float(s) * 1e3 for _, log in workers for s in _TASK_SECONDS.findall(log.read_text(errors="replace"))
    ]


def _compact_celery(tmp: str, slug: str, count: int, workers_count: int) -> tuple[float, int, list[float]]:
    from django.core.management import call_command

    from compression.models import CompressionRecord

    queue = f"bench-bulk-{uuid.uuid4().hex[:8]}"
    workers = _start_workers(tmp, queue, workers_count)
    try:
        done = CompressionRecord.objects.filter(conversation__agent__slug=slug, trigger="bulk")
        start = time.perf_counter()
        call_command(
            "compact_threads",
            "--agent",
            slug,
            *EVERY_THREAD,
            "--async",
            "--queue",
            queue,
            "--json",
            stdout=StringIO(),
        )
        deadline = time.monotonic() + WORKER_TIMEOUT_S
        while done.count() < count and time.monotonic() < deadline:
            time.sleep(0.05)
        elapsed = time.perf_counter() - start
        time.sleep(0.5)  # let the last "succeeded" lines reach the logs
        return elapsed, done.filter(status="completed").count(), _task_ms(workers)
    finally:
        _stop_workers(workers, queue)


def _throughput(tmp: str) -> list[dict]:
    sync_ids = _seed_compactable("bench-sync", COMPACT_THREADS)
    read_ms = _checkpoint_read_ms(sync_ids)
    seconds, report = _compact_sync("bench-sync")
    rows = [
        {
            "part": "throughput",
            "mode": "synchronous (`compact_threads`)",
            "threads": COMPACT_THREADS,
            "compressed": report["compressed"],
            "seconds": seconds,
            "threads_per_s": COMPACT_THREADS / seconds,
            "ms_per_thread": seconds * 1e3 / COMPACT_THREADS,
            "vs_sync": 1.0,
            "checkpoint_read_ms": read_ms,
        }
    ]
    for count in WORKER_COUNTS:
        mode = f"`--async`, {count} Celery worker{'s' if count > 1 else ''} (solo pool)"
        if not _redis_up():
            rows.append({"part": "throughput", "mode": f"{mode}: not measured (no Redis)"})
            continue
        slug = f"bench-celery-{count}"
        _seed_compactable(slug, COMPACT_THREADS)
        seconds, compressed, task_ms = _compact_celery(tmp, slug, COMPACT_THREADS, count)
        rows.append(
            {
                "part": "throughput",
                "mode": mode,
                "workers": count,
                "threads": COMPACT_THREADS,
                "compressed": compressed,
                "seconds": seconds,
                "threads_per_s": COMPACT_THREADS / seconds,
                "ms_per_thread": statistics.median(task_ms) if task_ms else None,
                "vs_sync": rows[0]["seconds"] / seconds,
            }
        )
    return rows


def _run_here() -> list[dict]:
    tmp = tempfile.mkdtemp(prefix="bench-bulk-")
    _pg("dropdb", "--if-exists", "--force")
    _pg("createdb")
    try:
        _setup_django(tmp)
        names = _seed_population(random.Random(7))
        rows = _selection(names)
        rows += _throughput(tmp)
        return rows
    finally:
        try:
            from django.db import connections

            from agent_platform.runtime.checkpointer import checkpointer_close

            checkpointer_close()
            connections.close_all()
        finally:
            _pg("dropdb", "--if-exists", "--force")
            shutil.rmtree(tmp, ignore_errors=True)


def run() -> list[dict]:
    """Run the benchmark in a child process (its own Django setup) and return its rows."""
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
    done = subprocess.run(
        [sys.executable, "-m", "bench.bulk", "--rows"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench.bulk failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- report ------------------------------------------------------------------------------------------


def notes(rows: list[dict]) -> str:
    selection = [r for r in rows if r["part"] == "selection"]
    head = next(r for r in selection if r["filters"] == HEADLINE_SELECTION)
    full = selection[-1]
    sync = next(r for r in rows if r["part"] == "throughput")
    celery = {r["workers"]: r for r in rows if r["part"] == "throughput" and r.get("workers")}
    lines = [
        f"Selecting the {head['selected']} most pressured of {THREADS:,} threads takes {head['median_ms']:.1f} ms: "
        "PostgreSQL walks the pressure index backwards and stops at the limit (plan column); the busy "
        "flags cost one scan of the running/queued runs by the status index plus one index probe per returned row. Unselective filters that return "
        f"thousands of rows cost what building the rows costs ({full['median_ms']:.0f} ms for all "
        f"{full['selected']:,}). No checkpoint is opened: opening one takes ~{sync['checkpoint_read_ms']:.1f} ms "
        f"here, so reading every checkpoint to find candidates would take ~{sync['checkpoint_read_ms'] * THREADS / 1e3:.0f} s "
        f"for {THREADS:,} threads.",
    ]
    if 2 in celery:
        one, two = celery.get(1), celery[2]
        lines.append(
            f"Throughput with the offline model: {sync['threads_per_s']:.1f} threads/s synchronously, "
            + (
                f"{one['threads_per_s']:.1f} on one worker (each task also pays a broker round trip: "
                "late ack, prefetch 1), "
                if one
                else ""
            )
            + f"{two['threads_per_s']:.1f} on two ({two['vs_sync']:.2f}× synchronous). A compaction here is "
            f"all local CPU (~{sync['ms_per_thread']:.0f} ms: checkpoint read and write, compaction, the "
            "offline summary), and this machine has "
            f"{os.cpu_count()} CPUs shared by the workers, PostgreSQL and Redis, so a second worker mostly "
            f"competes for the same cores (per-task time {two['ms_per_thread']:.0f} ms on two workers). With a real "
            "summary model each thread waits seconds on the network, and workers add throughput up to what "
            "the model server accepts."
        )
    return " ".join(lines) + "\n"


def render(rows: list[dict]) -> str:
    selection = [r for r in rows if r["part"] == "selection"]
    throughput = [r for r in rows if r["part"] == "throughput"]
    explain = next((r["explain"] for r in selection if r["explain"]), "")
    return (
        f"(a) `compression_candidates(...)` over {THREADS:,} threads ({OWNERS} owners, {AGENTS} agents, pressure "
        "uniform 0–1.2 with 10% never measured, last activity within 30 days, one run each: 3% running, 2% "
        f"waiting on the user) on PostgreSQL; time to build the list, median and best of {SELECTION_REPEAT}.\n\n"
        + markdown_table(
            selection,
            ["filters", "selected", "median_ms", "best_ms", "plan"],
            {"median_ms": num(2), "best_ms": num(2), "selected": lambda v: f"{v:,}"},
        )
        + f"\n<details><summary>EXPLAIN ANALYZE, {HEADLINE_SELECTION}</summary>\n\n```\n{explain}\n```\n\n</details>\n\n"
        + f"(b) Compaction of {COMPACT_THREADS} threads ({COMPACT_MESSAGES} real trajectory messages each, "
        f"`keep_messages={KEEP_MESSAGES}`, offline model), from the command's start to the last audit record; "
        "`ms_per_thread` is the mean per thread synchronously and the median task run time on the workers.\n\n"
        + markdown_table(
            throughput,
            ["mode", "threads", "compressed", "seconds", "threads_per_s", "ms_per_thread", "vs_sync"],
            {
                "seconds": num(1),
                "threads_per_s": num(1),
                "ms_per_thread": num(0),
                "vs_sync": lambda v: "" if v is None else f"{v:.2f}×",
            },
        )
        + "\n"
        + notes(rows)
    )


if __name__ == "__main__":
    if "--rows" in sys.argv:
        print(json.dumps(_run_here()))
    else:
        started = time.perf_counter()
        print(render(run()))
        print(f"({time.perf_counter() - started:.0f} s)")
