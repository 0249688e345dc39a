"""Issue 26 item 10's figure: searching inside messages from the thread list (``conversations.search.
thread_search``, the page's one query with its snippet subquery) over 2,000 threads of 25 messages
(50,000 messages; half the threads the searcher's, half another user's), on SQLite (icontains) and,
when reachable, PostgreSQL (full-text over the GIN index of migration 0010). A figure, not a gate.

    python -m bench.thread_search            # both databases (PostgreSQL at 127.0.0.1:5432 as postgres)
    python -m bench.thread_search --sqlite   # SQLite only

Each database runs in a child process on a throwaway database.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time

from bench.common import django_child, markdown_table, num, run_per_database

PG_DB = os.environ.get("BENCH_SEARCH_DB", "lists_bench_search")
THREADS, MESSAGES = 2_000, 25
REPEAT = 11
VOCABULARY = (
    "budget forecast train hangar invoice refund policy schedule meeting report summary quarter "
    "deploy server database index search thread agent model token window context memory pin"
).split()
QUERIES = {
    "rare word (1 thread)": "zeppelin",
    "common word (most threads)": "budget",
    "no match": "qwertyuiop",
}


def _child(database_url: str) -> dict:
    django_child(database_url)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    from agent_platform.models import Agent
    from conversations.models import Conversation, Message
    from conversations.search import thread_search

    rng = random.Random(26)
    searcher = get_user_model().objects.create_user("bench-searcher")
    other = get_user_model().objects.create_user("bench-other")
    agent = Agent.objects.create(name="Bench", slug="bench")
    threads = Conversation.objects.bulk_create(
        Conversation(owner=searcher if i % 2 else other, agent=agent, title=f"Thread {i}")
        for i in range(THREADS)
    )
    rows = []
    for index, thread in enumerate(threads):
        for seq in range(1, MESSAGES + 1):
            words = rng.choices(VOCABULARY, k=40)
            if index == 1 and seq == 7:
                words[10] = "zeppelin"
            rows.append(
                Message(
                    conversation=thread,
                    seq=seq,
                    role="user" if seq % 2 else "assistant",
                    content=" ".join(words),
                    lc_message_id=f"m-{index}-{seq}",
                )
            )
    Message.objects.bulk_create(rows, batch_size=5000)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    results = {}
    for label, query in QUERIES.items():

        def once(query: str = query) -> tuple[float, int]:
            started = time.perf_counter()
            found = [
                (t.pk, getattr(t, "hit_content", None)) for t in thread_search(user=searcher, query=query)
            ]
            return (time.perf_counter() - started) * 1000, len(found)

        once()
        timings, count = [], 0
        for _ in range(REPEAT):
            elapsed, count = once()
            timings.append(elapsed)
        results[label] = {"median_ms": statistics.median(timings), "max_ms": max(timings), "threads": count}
    return {"database": connection.vendor, "messages": THREADS * MESSAGES, "results": results}


def run(*, postgres: bool = True) -> list[dict]:
    return run_per_database(
        "bench.thread_search", sqlite_name="search.sqlite3", pg_db=PG_DB, postgres=postgres
    )


def render(rows: list[dict]) -> str:
    table = []
    for row in rows:
        for label, figures in (row.get("results") or {"": {}}).items():
            table.append(
                {
                    "database": row["database"],
                    "messages": f"{row['messages']:,}" if "messages" in row else "",
                    "query": label,
                    "threads found": figures.get("threads", ""),
                    "median ms": figures.get("median_ms"),
                    "max ms": figures.get("max_ms"),
                    "note": row.get("note", f"{REPEAT} runs"),
                }
            )
    return markdown_table(table, formats={"median ms": num(1), "max ms": num(1)})


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(_child(sys.argv[2])))
    else:
        print(render(run(postgres="--sqlite" not in sys.argv)))
