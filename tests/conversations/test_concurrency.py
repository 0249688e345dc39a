"""Concurrency under the Conversation row lock, on real PostgreSQL with real threads and connections."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from conversations.errors import ThreadBusy
from conversations.models import AgentRun
from conversations.services import message_intake, thread_lock

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


def _in_thread(target, *args, **kwargs) -> threading.Thread:
    def body():
        try:
            target(*args, **kwargs)
        finally:
            connection.close()

    worker = threading.Thread(target=body, daemon=True)
    worker.start()
    return worker


def _wait_until(predicate, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.mark.postgres
def test_concurrent_intakes_keep_fifo_order_and_lose_nothing(thread, user):
    per_client, clients = 4, 3
    barrier = threading.Barrier(clients)
    errors: list[BaseException] = []

    def client(name: str) -> None:
        barrier.wait()
        for i in range(per_client):
            try:
                message_intake(thread_id=thread.thread_id, user=user, content=f"{name}-{i}")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    workers = [_in_thread(client, f"c{n}") for n in range(clients)]
    for worker in workers:
        worker.join(60)
    assert errors == []

    user_messages = list(thread.messages.filter(role="user").order_by("seq"))
    assert len(user_messages) == per_client * clients  # nothing lost
    for n in range(clients):  # each client's own messages stay in its order
        mine = [m.content for m in user_messages if m.content.startswith(f"c{n}-")]
        assert mine == [f"c{n}-{i}" for i in range(per_client)]
    runs = list(AgentRun.objects.filter(conversation=thread).order_by("started_at"))
    assert all(run.status == AgentRun.Status.SUCCEEDED for run in runs), [r.error for r in runs]
    # FIFO: runs started in the order their messages entered the transcript, one at a time.
    assert [run.input_message.seq for run in runs] == [m.seq for m in user_messages]
    for earlier, later in zip(runs, runs[1:], strict=False):
        assert earlier.finished_at <= later.started_at
    seqs = list(thread.messages.order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    assert thread.messages.filter(role="assistant").count() == len(runs)


@pytest.mark.postgres
def test_intake_waits_a_bounded_time_for_the_lock_then_answers_thread_busy(thread, user, settings):
    settings.THREAD_LOCK_TIMEOUT_MS = 200
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:  # what a manual compression does while it summarizes
        with thread_lock(thread_id=thread.thread_id, user=user):
            locked.set()
            release.wait(10)

    holder = _in_thread(hold_lock)
    assert locked.wait(5)
    started = time.monotonic()
    with pytest.raises(ThreadBusy):
        message_intake(thread_id=thread.thread_id, user=user, content="while compressing")
    assert 0.15 <= time.monotonic() - started < 2
    with pytest.raises(ThreadBusy):
        with thread_lock(thread_id=thread.thread_id, user=user, nowait=True):
            pass
    release.set()
    holder.join(5)
    assert thread.messages.count() == 0
    message_intake(thread_id=thread.thread_id, user=user, content="after")
    assert thread.messages.filter(role="user").count() == 1


@pytest.mark.postgres
def test_thread_busy_over_http_is_409(client, thread, user, settings):
    settings.THREAD_LOCK_TIMEOUT_MS = 100
    client.force_login(user)
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with thread_lock(thread_id=thread.thread_id, user=user):
            locked.set()
            release.wait(10)

    holder = _in_thread(hold_lock)
    assert locked.wait(5)
    response = client.post(
        f"/api/threads/{thread.thread_id}/messages", {"content": "hi"}, content_type="application/json"
    )
    release.set()
    holder.join(5)
    assert response.status_code == 409
    assert response.json()["code"] == "thread_busy"


def test_a_message_sent_while_a_run_is_running_queues_and_runs_after_it(
    thread, user, scripted_model, settings, client
):
    settings.RUN_EXECUTION = "inprocess"  # the embedded default: a thread per run
    gate = threading.Event()
    model = scripted_model("first answer", "second answer", gate=gate)
    first = message_intake(thread_id=thread.thread_id, user=user, content="first")
    assert model.started.wait(10)  # the first run is inside its model call

    second = message_intake(thread_id=thread.thread_id, user=user, content="second")
    first.run.refresh_from_db()
    second.run.refresh_from_db()
    assert (first.run.status, second.run.status) == ("running", "queued")
    client.force_login(user)
    state = client.get(f"/api/threads/{thread.thread_id}/state").json()
    assert state["running"] is True and state["queued"] is True

    gate.set()
    _wait_until(
        lambda: not AgentRun.objects.filter(conversation=thread, status__in=["queued", "running"]).exists()
    )
    first.run.refresh_from_db()
    second.run.refresh_from_db()
    assert (first.run.status, second.run.status) == ("succeeded", "succeeded")
    assert first.run.finished_at <= second.run.started_at
    assert [call[-1].content for call in model.calls] == ["first", "second"]
    contents = list(thread.messages.order_by("seq").values_list("content", flat=True))
    assert contents.index("first answer") < contents.index("second answer")


def test_concurrent_in_process_runs_on_several_threads_all_succeed(user, agent, scripted_model, settings):
    """The embedded default (SQLite, runs in threads beside the requests): writes that meet wait, none fail."""
    from conversations.services import thread_create

    settings.RUN_EXECUTION = "inprocess"
    scripted_model()  # every reply is "(script exhausted)": the point is the writes, not the words
    threads = [thread_create(user=user, agent_slug=agent.slug, title=f"t{n}") for n in range(4)]
    per_thread = 3
    barrier = threading.Barrier(len(threads))
    errors: list[BaseException] = []

    def client(conversation) -> None:
        barrier.wait()
        for i in range(per_thread):
            try:
                message_intake(thread_id=conversation.thread_id, user=user, content=f"m{i}")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    workers = [_in_thread(client, conversation) for conversation in threads]
    for worker in workers:
        worker.join(60)
    assert errors == []
    _wait_until(lambda: not AgentRun.objects.filter(status__in=AgentRun.ACTIVE_STATUSES).exists(), 60)
    runs = AgentRun.objects.filter(conversation__in=threads)
    assert runs.count() == per_thread * len(threads)
    assert sorted({run.status for run in runs}) == ["succeeded"], [run.error for run in runs if run.error]
    for conversation in threads:
        assert conversation.messages.filter(role="assistant").count() == per_thread
