"""Issue 26 item 9: how long an edit takes to fork a thread's model view, by thread length and by how
far back the edited message is (the fork walks the checkpoint lineage back to the message's entry).

A throwaway SQLite database and checkpointer in a temporary directory, the offline model, runs
executed inline (``RUN_EXECUTION=eager``). A thread gets ``turns`` exchanges; then the last user
message and the first one are edited, each timed twice: the whole ``message_edit`` service (lock,
rows, fork, commit; the run it queues is not started) and the ``fork_before`` call within it.

    python -m bench.fork_latency
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

TURNS = (10, 50, 150)


def _setup(directory: str) -> None:
    os.environ.update(
        DATABASE_URL=f"sqlite:///{directory}/db.sqlite3",
        CHECKPOINT_SQLITE_PATH=f"{directory}/checkpoints.sqlite3",
        WORKDIR_ROOT=f"{directory}/workdirs",
        RUN_EXECUTION="eager",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    for name in ("REDIS_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _measure(turns: int) -> dict[str, float]:
    from django.contrib.auth import get_user_model

    from agent_platform.models import Agent
    from agent_platform.runtime import state_repository as repository_module
    from conversations.models import Message
    from conversations.services import message_intake, thread_create
    from conversations.services import versions as versions_service

    user = get_user_model().objects.create_user(f"bench-{turns}", password="x")
    agent, _ = Agent.objects.get_or_create(slug="bench", defaults={"name": "Bench"})
    thread = thread_create(user=user, agent_slug=agent.slug)
    for n in range(turns):
        message_intake(thread_id=thread.thread_id, user=user, content=f"Question {n}: " + "context " * 30)
    fork_seconds: list[float] = []
    original = repository_module.AgentStateRepository.fork_before

    def timed(self, message_id):
        started = time.perf_counter()
        try:
            return original(self, message_id)
        finally:
            fork_seconds.append(time.perf_counter() - started)

    repository_module.AgentStateRepository.fork_before = timed
    versions_service.run_dispatch_next = lambda **kwargs: None  # measure the edit, not its run
    results = {}
    try:
        for label, order in (("last", "-seq"), ("first", "seq")):
            message = Message.objects.filter(conversation=thread, role="user").order_by(order).first()
            started = time.perf_counter()
            versions_service.message_edit(
                thread_id=thread.thread_id, message_id=message.pk, user=user, content="Edited question"
            )
            results[f"{label} total ms"] = (time.perf_counter() - started) * 1000
            results[f"{label} fork ms"] = fork_seconds[-1] * 1000
            # Each edit queued a run that was not started: drop it so the next edit is allowed.
            thread.runs.filter(status="queued").update(status="cancelled")
    finally:
        repository_module.AgentStateRepository.fork_before = original
    return results


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        _setup(directory)
        rows = []
        for turns in TURNS:
            figures = _measure(turns)
            rows.append((turns, figures))
        print(f"load average: {os.getloadavg()[0]:.2f} (1 min)", file=sys.stderr)
        print("| turns | edit last: total ms | fork ms | edit first: total ms | fork ms |")
        print("|---:|---:|---:|---:|---:|")
        for turns, f in rows:
            print(
                f"| {turns} | {f['last total ms']:.1f} | {f['last fork ms']:.1f} "
                f"| {f['first total ms']:.1f} | {f['first fork ms']:.1f} |"
            )


if __name__ == "__main__":
    main()
