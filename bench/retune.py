"""Issue 27 item 3's figure: "what this threshold would do" over 10,000 threads of one agent (plus
10,000 of other agents) — the one aggregate query behind the agent form's retune panel
(``conversations.selectors.agent_retune_counts``), timed on SQLite and, when it is reachable, on
PostgreSQL; with PostgreSQL's plan. A figure, not a gate.

    python -m bench.retune            # both databases (PostgreSQL at 127.0.0.1:5432 as postgres)
    python -m bench.retune --sqlite   # SQLite only

Each database runs in a child process (Django is set up once per process) on a throwaway database.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time

from bench.common import django_child, markdown_table, num, run_per_database

PG_DB = os.environ.get("BENCH_RETUNE_DB", "bench_retune")
THREADS = 10_000  # of the agent being retuned
OTHER_THREADS = 10_000  # of other agents, which the query must skip
REPEAT = 21


def _child(database_url: str) -> dict:
    django_child(database_url)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    from agent_platform.models import Agent
    from conversations.models import Conversation
    from conversations.selectors import agent_retune_counts

    rng = random.Random(27)
    owner = get_user_model().objects.create_user("bench-owner")
    agent = Agent.objects.create(name="Retuned", slug="retuned")
    other = Agent.objects.create(name="Other", slug="other")
    trigger = agent.effective_trigger
    rows = [
        Conversation(
            owner=owner,
            agent=agent if index < THREADS else other,
            context_tokens=None if index % 50 == 0 else int(trigger * rng.uniform(0.05, 1.4)),
        )
        for index in range(THREADS + OTHER_THREADS)
    ]
    Conversation.objects.bulk_create(rows, batch_size=2000)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")

    def once() -> tuple[float, object]:
        started = time.perf_counter()
        counts = agent_retune_counts(agent_id=agent.pk, trigger_today=trigger, trigger_typed=trigger // 2)
        return (time.perf_counter() - started) * 1000, counts

    once()  # warm: connection and statement caches
    timings, counts = [], None
    for _ in range(REPEAT):
        elapsed, counts = once()
        timings.append(elapsed)
    plan = ""
    if connection.vendor == "postgresql":
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            agent_retune_counts(agent_id=agent.pk, trigger_today=trigger, trigger_typed=trigger // 2)
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN ANALYZE " + captured.captured_queries[-1]["sql"])
            plan = "\n".join(line for (line,) in cursor.fetchall())
    timings.sort()
    return {
        "database": connection.vendor,
        "threads": THREADS,
        "other_threads": OTHER_THREADS,
        "median_ms": statistics.median(timings),
        "p95_ms": timings[int(len(timings) * 0.95) - 1],
        "today": counts.today,
        "typed": counts.typed,
        "unmeasured": counts.unmeasured,
        "plan": plan,
    }


def run(*, postgres: bool = True) -> list[dict]:
    return run_per_database("bench.retune", sqlite_name="retune.sqlite3", pg_db=PG_DB, postgres=postgres)


def render(rows: list[dict]) -> str:
    table = [
        {
            "database": row["database"],
            "threads (agent / others)": f"{row['threads']:,} / {row['other_threads']:,}"
            if "threads" in row
            else "",
            "median ms": row.get("median_ms"),
            "p95 ms": row.get("p95_ms"),
            "today: under / hint→T / over": "/".join(str(v) for v in row["today"].values())
            if "today" in row
            else "",
            "T/2: under / hint→T / over": "/".join(str(v) for v in row["typed"].values())
            if "typed" in row
            else "",
            "note": row.get("note", f"{REPEAT} runs, one query each, target < 200 ms"),
        }
        for row in rows
    ]
    text = markdown_table(table, formats={"median ms": num(2), "p95 ms": num(2)})
    plans = [row["plan"] for row in rows if row.get("plan")]
    return text + ("\nPostgreSQL plan of the filtered rows:\n\n```\n" + plans[0] + "\n```\n" if plans else "")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(_child(sys.argv[2])))
    else:
        print(render(run(postgres="--sqlite" not in sys.argv)))
