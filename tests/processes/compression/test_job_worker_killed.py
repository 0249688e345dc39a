"""A compression job whose Celery pool child is SIGKILLed mid-summary: the redelivered task reclaims
it through the run leases' machinery and performs it again; the thread is compressed once, never
half-applied."""

from __future__ import annotations

import os
import signal
import time

import pytest

from compression.models import CompressionJob, CompressionRecord
from compression.services import thread_compress_submit
from conversations.services import thread_create
from tests.compression._threads import repository_for, seed_state
from tests.context_engine.chats import SUMMARY, conversation_messages
from tests.processes.support import celery_worker, tasks_sent_to

LEASE = 3


def _wait_for(predicate, *, what, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.1)


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_job_leaves_it_retried_and_the_thread_consistent(
    user, stub_agent_with, openai_stub, tmp_path, settings
):
    openai_stub.reply(SUMMARY, delay=120)  # the call the killed child never hears back from
    openai_stub.reply(SUMMARY)
    thread = thread_create(user=user, agent_slug=stub_agent_with().slug)
    seed_state(thread, conversation_messages(5))
    before = repository_for(thread).get_values()
    settings.RUN_EXECUTION = "celery"
    with (
        celery_worker(
            tmp_path,
            RUN_LEASE_SECONDS=str(LEASE),
            STUB_API_KEY="sk-test",
            MODEL_KEY_BINDINGS=settings.MODEL_KEY_BINDINGS,  # the stub's origin, as the test process binds it
        ) as worker,
        tasks_sent_to(worker.queue),
    ):
        job = thread_compress_submit(thread_id=thread.thread_id, user=user)
        _wait_for(lambda: len(openai_stub.requests) == 1, what="the first summary call")
        job.refresh_from_db()
        assert job.status == "running"
        child_pid = int(job.worker.split(":")[1])
        assert child_pid != worker.process.pid  # the pool child, not the worker's main process

        os.kill(child_pid, signal.SIGKILL)
        assert repository_for(thread).get_values() == before  # nothing applied by the dead child

        _wait_for(
            lambda: CompressionJob.objects.filter(pk=job.pk, status__in=["succeeded", "failed"]).exists(),
            what=lambda: f"the job to end; worker log:\n{worker.text()[-3000:]}",
        )
    job.refresh_from_db()
    assert (job.status, job.attempts, job.error) == ("succeeded", 2, "")
    assert int(job.worker.split(":")[1]) != child_pid
    values = repository_for(thread).get_values()
    assert values["_summarization_event"]["cutoff_index"] == job.record.cutoff_index > 0
    assert values["messages"] == before["messages"]  # the transcript is never rewritten
    assert CompressionRecord.objects.filter(conversation=thread).count() == 1
