"""Run throughput on the production path: 20 threads × 10 messages on PostgreSQL, two Celery workers
(one process each) and a local OpenAI-protocol stub; messages/s and p50/p95 from send to run finished,
with the figures that are stable on a shared machine beside them: CPU-seconds per message (the
workers' processes, from /proc) and Redis connections opened per message (the server's
``total_connections_received`` during the messages, less what the same server received in as long an
idle window before: other clients of a shared Redis).

Each thread's client sends a message, waits for its run to finish (one watcher thread reads the pending
runs' statuses every 20 ms for all of them), then sends the next, all 20 at once. A fresh database
``<DATABASE_URL's name>_bench`` is created, migrated and dropped.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/agents REDIS_URL=redis://127.0.0.1:6379/0 \
        python -m bench.throughput [--repeat N] [--compare OTHER_CHECKOUT] [--starve N] [--messages N]
        [--compressions N]

Each measurement runs in a process of its own, ``--repeat`` times (default 3), and each figure is
reported as the median of its runs, with every run listed: one run of 200 messages moved by a quarter
from run to run on an idle two-core machine, so a single one says little. ``--compare`` measures another
checkout of the project (e.g. a worktree of an earlier commit) in the same session, with this file's
measuring code and that checkout's platform code, the two codes' runs alternating, and prints both
median rows in one table. Any commit since the first benchmark works: for one from before the
re-layering (the settings and Celery app in ``agent_platform``, not ``config``) ``project_package``
picks the old names, the one shim needed.

``--compressions N`` measures the other shape of issue 41's probe instead: 200 messages into ONE
thread from 8 clients, in 25 rounds of one message each, and N compressions of that thread asked for
(the service the API calls) between the rounds, while the thread is idle; the next round's messages
are sent at once after them. The agent keeps every message (``summary_keep_messages``), so no
compression has anything to fold: the target is that no message is refused (a job with nothing to
fold must never hold the thread, as wave 2's jobs did not).

``--starve N`` runs N busy processes (one core's spin each) beside the workers while the messages are
sent, each round measuring the same code without them first (the ratio of CPU per message is of one
session); ``--messages N`` sends N per thread instead of 10 (a starved run that would take too long);
its table is printed, not written to docs/throughput.md (add the row there with its load). Every
client's refusal or exception, every run that did not succeed, and every error line the workers
logged are printed to stderr and counted (failed, missing, worker errors): none is thrown away.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

HERE = Path(__file__).resolve().parents[1]
# The checkout whose platform is measured (``--compare`` runs this file against another one).
ROOT = Path(os.environ.get("BENCH_ROOT") or HERE)
if sys.path and Path(sys.path[0]).resolve() == HERE / "bench":
    sys.path.pop(0)  # run as a script: bench/'s modules must not shadow packages
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DOC = HERE / "docs" / "throughput.md"  # its own page: `make bench` rewrites docs/benchmarks.md whole
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SECTION = "# Run throughput"
THREADS, MESSAGES, WORKERS = 20, 10, 2
RUN_TIMEOUT_SECONDS = 300
# --compressions: 8 clients × 25 messages into one thread, in 25 rounds with compressions between them.
COMPRESSION_CLIENTS, COMPRESSION_MESSAGES = 8, 25
KEEP_EVERYTHING = 1_000_000  # summary_keep_messages: nothing is ever old enough to fold


def project_package(root: Path) -> str:
    """The checkout's project package (settings and Celery app): ``config`` since the re-layering,
    ``agent_platform`` before it. The shim that lets ``--compare`` measure any commit since the first
    benchmark: everything else the bench imports kept its path."""
    if (root / "config" / "settings.py").is_file():
        return "config"
    if (root / "agent_platform" / "settings.py").is_file():
        return "agent_platform"
    raise SystemExit(f"{root}: neither config/settings.py nor agent_platform/settings.py (not this project?)")


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


def cpu_seconds(pids: list[int]) -> float:
    """CPU time of ``pids`` and their live children (Celery's pool processes), and of the children
    they already reaped. The tests read processes' CPU time with it too."""
    return sum(_cpu_split(pids))


def _cpu_split(pids: list[int]) -> tuple[float, float]:
    """``cpu_seconds`` as (user, system): a process the kernel keeps descheduling (a starved machine)
    is charged more system time for the same work, which tells it apart from work of its own."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) in pids:
            children.append(int(stat.parent.name))
    user = system = 0
    for pid in {*pids, *children}:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user += int(fields[11]) + int(fields[13])  # utime cutime
        system += int(fields[12]) + int(fields[14])  # stime cstime
    return user / CLOCK_TICKS, system / CLOCK_TICKS


def _redis_connections(redis_url: str) -> int:
    import redis

    return int(redis.Redis.from_url(redis_url).info("stats")["total_connections_received"])


def _bench_environment(bench_url: str) -> dict[str, str]:
    """The environment of this process and of the workers: the bench database, a queue of this run's
    own and a fresh workdir root (set in ``os.environ`` too, before Django starts here)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": f"{project_package(ROOT)}.settings",
        "DATABASE_URL": bench_url,
        "CELERY_TASK_DEFAULT_QUEUE": f"bench-{uuid.uuid4().hex[:8]}",
        "WORKDIR_ROOT": str(Path(tempfile.mkdtemp(prefix="bench-throughput-"))),
        "BENCH_API_KEY": "sk-bench",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    return env


def _seeded(env: dict[str, str], *, threads: int = THREADS) -> tuple[Any, Any, list[Any]]:
    """Migrate the bench database, start Django here and the stub, and create the user, the endpoint, the
    agent and the threads: (stub, user, threads). Binds the key to the stub's origin in ``env``, for the
    workers started afterwards."""
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from agent_platform.models import Agent, ModelEndpoint
    from conversations.services import thread_create
    from tests.support.openai_stub import OpenAIStub

    stub = OpenAIStub().start()
    # (the origin from the URL: an earlier checkout's stub, measured by --compare, has no ``origin``)
    origin = "{0.scheme}://{0.netloc}".format(urlparse(stub.base_url))
    env["MODEL_KEY_BINDINGS"] = f"BENCH_API_KEY={origin}"
    for _ in range(THREADS * MESSAGES):
        stub.reply("A short answer from the stub.")
    user = get_user_model().objects.create_user("bench", password="bench-pw-123")
    endpoint = ModelEndpoint.objects.create(name="stub", base_url=stub.base_url, api_key_env="BENCH_API_KEY")
    keep = {"summary_keep_messages": KEEP_EVERYTHING} if threads == 1 else {}  # --compressions: fold nothing
    Agent.objects.create(
        name="Bench", slug="bench", endpoint=endpoint, model_name="gpt-4o-mini", tools=[], **keep
    )
    created = [thread_create(user=user, agent_slug="bench", title=f"bench {n}") for n in range(threads)]
    return stub, user, created


def _start_workers(workers: list[subprocess.Popen], env: dict[str, str]) -> None:
    """Start the Celery workers on this run's queue, into ``workers`` one by one (so that the caller stops
    those already started if a later one fails to start)."""
    queue = env["CELERY_TASK_DEFAULT_QUEUE"]
    for n in range(WORKERS):
        workers.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    project_package(ROOT),
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
                stderr=_worker_log(env, n).open("wb"),  # kept: its errors are printed at the end
            )  # fmt: skip
        )


def _worker_log(env: dict[str, str], n: int) -> Path:
    return Path(env["WORKDIR_ROOT"]) / f"worker-{n}.log"


def _worker_errors(env: dict[str, str]) -> list[str]:
    """The error lines the workers logged (their tracebacks' last lines included), in order."""
    lines: list[str] = []
    for n in range(WORKERS):
        try:
            text = _worker_log(env, n).read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if "ERROR" in line or "CRITICAL" in line or ("Error" in line and not line.startswith(" ")):
                lines.append(f"worker {n}: {line.strip()}")
    return lines


def _starved(count: int) -> list[subprocess.Popen]:
    """``count`` busy processes beside the workers (``--starve``): each spins one core's worth."""
    spin = "while True:\n    pass\n"
    return [
        subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(count)
    ]


def _background_connection_rate(redis_url: str) -> float:
    """Connections per second the shared Redis receives from other clients, measured idle for 5 s."""
    idle_started, idle_connections = time.monotonic(), _redis_connections(redis_url)
    time.sleep(5)
    return (_redis_connections(redis_url) - idle_connections) / (time.monotonic() - idle_started)


class _Pending:
    """The runs the clients wait for. One watcher reads every pending run's status in one query every
    20 ms and wakes its client: the clients' own polling (20 threads, a query each every 20 ms: ~1,000
    queries/s) cost the machine as much CPU as a worker, on the two cores the workers are measured on."""

    def __init__(self) -> None:
        self._runs: dict[int, tuple[threading.Event, list]] = {}
        self._lock = threading.Lock()
        self.finished = threading.Event()

    def wait(self, run_pk: int) -> tuple[str, str]:
        """(status, error) of the run once it ends, or ("timeout", ...) after ``RUN_TIMEOUT_SECONDS``."""
        done, result = threading.Event(), []
        with self._lock:
            self._runs[run_pk] = (done, result)
        if done.wait(RUN_TIMEOUT_SECONDS):
            status, error = result
            return status, error
        return "timeout", "no result"

    def watch(self) -> None:
        from django.db import connection

        from conversations.models import AgentRun

        try:
            while not self.finished.is_set():
                with self._lock:
                    ids = list(self._runs)
                if ids:
                    ended = AgentRun.objects.filter(
                        pk__in=ids, status__in=("succeeded", "failed", "cancelled")
                    )
                    for pk, status, error in ended.values_list("pk", "status", "error"):
                        with self._lock:
                            done, result = self._runs.pop(pk)
                        result[:] = [status, error]
                        done.set()
                time.sleep(0.02)
        finally:
            connection.close()


class _Compressor:
    """``--compressions N``: N compressions of the clients' one thread, asked for (the service
    ``POST .../compress`` calls) between rounds: once every client's message of a round is answered
    (the thread idle), its share of them, and the next round's messages go at once after. A compression
    that held the thread would refuse them; one tried while the thread is busy (a job not ended yet) is
    tried again every 20 ms, counted as ``busy``."""

    def __init__(self, conversation: Any, user: Any, count: int, *, rounds: int) -> None:
        self.conversation, self.user, self.count = conversation, user, count
        self.per_round = -(-count // rounds)  # ceil
        self.ended: dict[str, int] = {}  # compressions by the status their job had when asked
        self.busy = 0
        self.errors: list[str] = []

    def accepted(self) -> int:
        return sum(self.ended.values())

    def figures(self) -> dict[str, Any]:
        return {
            "compressions": self.accepted(),
            "compression_ended": self.ended,
            "compressions_busy": self.busy,
        }

    def between_rounds(self) -> None:
        """Ask for this round's compressions (a ``threading.Barrier``'s action: the clients wait)."""
        from compression.services import thread_compress_submit
        from conversations.errors import ThreadBusy

        goal = min(self.count, self.accepted() + self.per_round)
        deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
        while self.accepted() < goal and time.monotonic() < deadline:
            try:
                job = thread_compress_submit(thread_id=self.conversation.thread_id, user=self.user)
            except ThreadBusy:
                self.busy += 1
                time.sleep(0.02)
                continue
            except Exception as exc:  # noqa: BLE001 - kept and printed
                self.errors.append(f"compression: {exc.__class__.__name__}: {exc}")
                return
            self.ended[job.status] = self.ended.get(job.status, 0) + 1


def _send_all(
    plan: list[tuple[Any, int]], *, user: Any, compressor: _Compressor | None = None
) -> tuple[list[float], list[str], float]:
    """Each ``(thread, count)`` of ``plan`` is a client that sends ``count`` messages to its thread, each
    after its previous run ended, all clients at once; with a ``compressor``, the clients go in rounds
    (one message each) and the compressor asks for its compressions between them: (latencies,
    failures, wall seconds from the start to the last client's end)."""
    from conversations.services import message_intake

    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    pending = _Pending()
    rounds = threading.Barrier(len(plan), action=compressor.between_rounds) if compressor else None

    def client(conversation, count: int) -> None:
        from django.db import connection

        try:
            for i in range(count):
                sent = time.monotonic()
                try:
                    run = message_intake(
                        thread_id=conversation.thread_id, user=user, content=f"message {i}"
                    ).run
                    status, error = pending.wait(run.pk)
                except Exception as exc:  # noqa: BLE001 - kept and printed: never a message silently missing
                    status, error = "refused", f"{exc.__class__.__name__}: {exc}"
                with lock:
                    latencies.append(time.monotonic() - sent)
                    if status != "succeeded":
                        failures.append(f"{status}: {error}")
                if rounds is not None:
                    rounds.wait(RUN_TIMEOUT_SECONDS)
        except threading.BrokenBarrierError:
            with lock:
                failures.append("refused: a client's round never ended")
        finally:
            connection.close()

    started = time.monotonic()
    watching = threading.Thread(target=pending.watch, daemon=True)
    watching.start()
    clients = [threading.Thread(target=client, args=step) for step in plan]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    wall = time.monotonic() - started
    pending.finished.set()
    watching.join(5)
    return latencies, failures, wall


def _stop_workers(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        worker.terminate()
    for worker in workers:
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()


def _close_and_drop(admin_url: str, bench_name: str) -> None:
    """Close this process's connections (Django's and the checkpointer's pool), then drop the database."""
    from django.db import connections

    connections.close_all()
    from agent_platform.runtime.checkpointer import checkpointer_close

    checkpointer_close()
    _psql(admin_url, f'DROP DATABASE IF EXISTS "{bench_name}" WITH (FORCE)')


def measure(*, starve: int = 0, compressions: int = 0, messages: int = MESSAGES) -> dict[str, Any]:
    base_url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not base_url.startswith("postgres") or not redis_url:
        sys.exit("bench.throughput needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    bench_url, bench_name, admin_url = _bench_database(base_url)
    _psql(admin_url, f'DROP DATABASE IF EXISTS "{bench_name}" WITH (FORCE)')
    _psql(admin_url, f'CREATE DATABASE "{bench_name}"')
    env = _bench_environment(bench_url)
    workers: list[subprocess.Popen] = []
    starving: list[subprocess.Popen] = []
    try:
        stub, user, threads = _seeded(env, threads=1 if compressions else THREADS)
        if compressions:  # one thread, 8 clients, and the compressions beside them
            plan = [(threads[0], COMPRESSION_MESSAGES)] * COMPRESSION_CLIENTS
            compressor: _Compressor | None = _Compressor(
                threads[0], user, compressions, rounds=COMPRESSION_MESSAGES
            )
        else:
            plan, compressor = [(thread, messages) for thread in threads], None
        _start_workers(workers, env)
        time.sleep(5)  # the workers connect to the broker
        starving = _starved(starve)
        # The shared Redis's background: connections other clients open meanwhile.
        background_rate = _background_connection_rate(redis_url)

        worker_pids = [worker.pid for worker in workers]
        load_start = os.getloadavg()[0]
        cpu_start, connections_start = _cpu_split(worker_pids), _redis_connections(redis_url)
        latencies, failures, wall = _send_all(plan, user=user, compressor=compressor)
        time.sleep(0.5)  # the last events leave the workers' publishers
        user, system = (end - start for end, start in zip(_cpu_split(worker_pids), cpu_start, strict=True))
        cpu = user + system
        opened = _redis_connections(redis_url) - connections_start
        stub.stop()
        _stop_workers(starving)
        count = max(1, len(latencies))
        errors = _worker_errors(env)
        if compressor:
            errors += compressor.errors
        for line in [*failures, *errors]:
            print(line, file=sys.stderr)  # the parent prints its children's errors
        return {
            "messages": len(latencies),
            "failed": len(failures),
            "missing": sum(count for _thread, count in plan) - len(latencies),
            "refused": sum(failure.startswith("refused") for failure in failures),
            **(compressor.figures() if compressor else {}),
            "worker_errors": len(errors),
            "failures": sorted(set(failures))[:10],
            "starve": starve,
            "wall_s": wall,
            "messages_per_s": len(latencies) / wall,
            "p50_s": statistics.median(latencies),
            "p95_s": _percentile(latencies, 0.95),
            "cpu_per_message": cpu / count,
            "cpu_system_share": system / cpu if cpu else 0.0,  # printed to stderr, in the JSON row
            "redis_per_message": max(0.0, opened - background_rate * wall) / count,
            "redis_raw_per_message": opened / count,
            "load_start": load_start,
            "load_end": os.getloadavg()[0],
            "cores": os.cpu_count() or 0,
        }
    finally:
        _stop_workers(starving)
        _stop_workers(workers)
        _close_and_drop(admin_url, bench_name)


def _label(root: Path) -> str:
    commit = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return f"`{commit or root.name}`"


def _measured(
    root: Path, *, starve: int = 0, compressions: int = 0, messages: int = MESSAGES
) -> dict[str, Any]:
    """One measurement of ``root``'s platform with this file's measuring code, in a fresh process (each
    gets its own database, workers and stub)."""
    env = {**os.environ, "BENCH_ROOT": str(root)}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--row", "--starve", str(starve),
         "--compressions", str(compressions), "--messages", str(messages)], cwd=root, env=env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.stderr.strip():  # the child's errors, and its clients' and workers' (never thrown away)
        print(done.stderr.rstrip(), file=sys.stderr)
    if done.returncode != 0:
        sys.exit(f"the measurement of {root} failed (exit {done.returncode}); its errors are above")
    return json.loads(done.stdout.strip().splitlines()[-1])


MEDIAN_FIGURES = (
    "messages_per_s", "p50_s", "p95_s", "cpu_per_message", "redis_per_message", "redis_raw_per_message"
)  # fmt: skip


def _median_row(runs: list[dict[str, float | int]]) -> dict[str, float | int]:
    """Each figure's median over the runs (loads: the lowest start and the highest end)."""
    rates = [run["messages_per_s"] for run in runs]
    return {
        **{key: statistics.median(run[key] for run in runs) for key in MEDIAN_FIGURES},
        "messages": sum(run["messages"] for run in runs),
        "failed": sum(run["failed"] for run in runs),
        "missing": sum(run.get("missing", 0) for run in runs),
        "worker_errors": sum(run.get("worker_errors", 0) for run in runs),
        "load_start": min(run["load_start"] for run in runs),
        "load_end": max(run["load_end"] for run in runs),
        "runs": len(runs),
        "cores": runs[0]["cores"],
        "rate_min": min(rates),
        "rate_max": max(rates),
    }


def _tabulated(
    labels: list[str], runs: list[tuple[int, dict[str, float | int]]]
) -> tuple[list[tuple[str, dict[str, float | int]]], list[tuple[str, dict[str, float | int]]]]:
    """``markdown``'s arguments from the runs as they ran, each tagged with its code's place in
    ``labels``: one median row per code, of that code's runs only (two checkouts may share a label)."""
    medians = [
        (label, _median_row([run for of, run in runs if of == place])) for place, label in enumerate(labels)
    ]
    return medians, [(labels[place], run) for place, run in runs]


def markdown(
    rows: list[tuple[str, dict[str, float | int]]], runs: list[tuple[str, dict[str, float | int]]]
) -> str:
    """``rows``: one median row per code; ``runs``: every run, in the order they ran."""
    repeat = rows[0][1]["runs"]
    lines = [
        f"{SECTION}\n",
        f"{THREADS} threads × {MESSAGES} messages sent at once (each thread waits for its run before the next "
        f"message), PostgreSQL, {WORKERS} Celery workers of one process each, a local OpenAI-protocol stub "
        f"(`python -m bench.throughput --repeat {repeat}`). Latency is from the send to the run's end, as one "
        f"watcher reading every pending run's status every 20 ms sees it. CPU is the workers' "
        f"processes' CPU-seconds per message; Redis is connections opened per message (the server's count "
        f"less its background rate, measured idle just before; raw count beside it). Load is the machine's "
        f"1-minute load average at the start and the end of the messages, on {rows[0][1]['cores']} cores: "
        f"wall-clock figures move with it, CPU per message less (still by tens of percent at a high load). "
        f"Each row is the median of {repeat} runs of {THREADS * MESSAGES} messages (messages and failures: "
        f"their sum; load: the lowest start and the highest end); with `--compare` the two codes' runs "
        f"alternate, so drift in the machine's load falls on both. Every run is listed below.\n",
        "| code | runs | messages | failed (missing; worker errors) | messages/s (median, min–max) | p50 | p95 | CPU-s / message | "
        "Redis conn. / message (raw) | load start → end |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, row in rows:
        lines.append(
            f"| {label} | {row['runs']} | {row['messages']} | {row['failed']} ({row['missing']}; {row['worker_errors']}) | "
            f"{row['messages_per_s']:.2f} ({row['rate_min']:.2f}–{row['rate_max']:.2f}) | {row['p50_s']:.2f} s | "
            f"{row['p95_s']:.2f} s | {row['cpu_per_message']:.3f} | "
            f"{row['redis_per_message']:.2f} ({row['redis_raw_per_message']:.2f}) | "
            f"{row['load_start']:.1f} → {row['load_end']:.1f} |"
        )
    if len(rows) == 2:
        (before_label, before), (after_label, after) = rows
        lines += [
            "",
            f"{after_label} against {before_label}, medians of the same session: CPU-s per message ×"
            f"{after['cpu_per_message'] / before['cpu_per_message']:.2f}, Redis connections per message ×"
            f"{after['redis_per_message'] / max(before['redis_per_message'], 1e-9):.2f}, messages/s ×"
            f"{after['messages_per_s'] / before['messages_per_s']:.2f}, p95 ×{after['p95_s'] / before['p95_s']:.2f}.",
        ]
    lines += [
        "",
        "## Every run",
        "",
        "| # | code | messages | failed (missing) | wall | messages/s | p50 | p95 | CPU-s / message | "
        "Redis conn. / message (raw) | load start → end |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for number, (label, run) in enumerate(runs, 1):
        lines.append(
            f"| {number} | {label} | {run['messages']} | {run['failed']} ({run.get('missing', 0)}) | {run['wall_s']:.1f} s | "
            f"{run['messages_per_s']:.2f} | {run['p50_s']:.2f} s | {run['p95_s']:.2f} s | "
            f"{run['cpu_per_message']:.3f} | {run['redis_per_message']:.2f} ({run['redis_raw_per_message']:.2f}) | "
            f"{run['load_start']:.1f} → {run['load_end']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def compression_rows(runs: list[tuple[str, dict[str, Any]]]) -> str:
    """``--compressions``' table: one row per run, the messages refused first."""
    lines = [
        "| code | messages | refused | failed (missing) | compressions asked (ended at once: status) | "
        "compression tries refused busy | wall | p95 | CPU-s / message | load start → end |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, run in runs:
        ended = ", ".join(f"{n} {status}" for status, n in sorted(run["compression_ended"].items()))
        lines.append(
            f"| {label} | {run['messages']} | {run['refused']} | {run['failed']} ({run['missing']}) | "
            f"{run['compressions']} ({ended or 'none'}) | {run['compressions_busy']} | {run['wall_s']:.1f} s | "
            f"{run['p95_s']:.2f} s | {run['cpu_per_message']:.3f} | {run['load_start']:.1f} → {run['load_end']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def _option(name: str, default: str | None = None) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main() -> None:
    starve = int(_option("--starve", "0") or 0)
    compressions = int(_option("--compressions", "0") or 0)
    messages = int(_option("--messages", str(MESSAGES)) or MESSAGES)  # per thread
    if "--row" in sys.argv:  # one measurement, as JSON, for the parent that repeats and tabulates
        print(json.dumps(measure(starve=starve, compressions=compressions, messages=messages)))
        return
    repeat = int(_option("--repeat", "3"))
    roots = [ROOT]
    if (other := _option("--compare")) is not None:
        roots.insert(0, Path(other).resolve())
    # --starve N: each round measures the same code unstarved, then starved (the ratio is of one session).
    modes = [0, starve] if starve else [0]
    measured_codes = [(root, mode) for root in roots for mode in modes]
    labels = [_label(root) + (f" + {mode} busy" if mode else "") for root, mode in measured_codes]
    runs: list[tuple[int, dict[str, float | int]]] = []  # (the code's place in measured_codes, its run)
    for _ in range(repeat):
        # alternating: the older code first in each round, unstarved before starved
        for place, (root, mode) in enumerate(measured_codes):
            measured = _measured(root, starve=mode, compressions=compressions, messages=messages)
            runs.append((place, measured))
            system = measured.get("cpu_system_share", 0.0)
            print(
                f"{labels[place]}: {measured['messages_per_s']:.2f} messages/s, "
                f"CPU-s per message {measured['cpu_per_message']:.3f} ({system:.0%} system)",
                file=sys.stderr,
            )
    if compressions:  # its table is printed, for docs/throughput.md's section on it (with the load)
        print(compression_rows([(labels[place], run) for place, run in runs]))
        return
    table = markdown(*_tabulated(labels, runs))
    print(table)
    if ROOT == HERE and not starve and messages == MESSAGES:  # a starved run's row goes in by hand
        DOC.write_text(with_kept_sections(table), encoding="utf-8")


KEPT = "<!-- Written by hand below this line: bench.throughput keeps it when it rewrites the table. -->"


def with_kept_sections(table: str) -> str:
    """The page's new table, followed by what was written by hand below ``KEPT`` (the starved and
    compression rows, their notes), which a new table must not erase."""
    try:
        page = DOC.read_text(encoding="utf-8")
    except OSError:
        return table
    return table if KEPT not in page else f"{table}\n{KEPT}\n{page.split(KEPT, 1)[1].lstrip(chr(10))}"


if __name__ == "__main__":
    main()
