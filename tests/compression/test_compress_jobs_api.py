"""The manual compression job through the API: 202 with the job and its Location, ``?wait=true``, the
job's reads, Stop, idempotent replays, and recovery of a job whose worker died."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from compression.models import CompressionJob
from compression.services import compress_jobs_recover
from compression.services.jobs import compress_job_perform
from tests.compression._threads import repository_for, seed_state, workdir_files
from tests.context_engine.chats import SUMMARY, conversation_messages

pytestmark = [pytest.mark.django_db, pytest.mark.services]


@pytest.fixture
def thread(make_thread):
    """An idle thread with five turns of history: enough to summarize."""
    return make_thread("Job thread")


@pytest.fixture
def not_started(monkeypatch):
    """Jobs stay queued (no worker picks them up) until the test performs them."""
    started: list[int] = []
    monkeypatch.setattr(
        "compression.services.compress.compress_job_start", lambda *, job_id: started.append(job_id)
    )
    return started


def _compress(client, thread, query: str = "", **headers):
    return client.post(f"/api/threads/{thread.thread_id}/compress{query}", headers=headers)


def test_compress_answers_202_with_the_job_and_where_to_read_it(
    client, user, thread, summarizer, not_started
):
    summarizer(SUMMARY)
    client.force_login(user)

    response = _compress(client, thread)

    assert response.status_code == 202, response.content
    job = response.json()
    assert (job["status"], job["trigger"], job["result"], job["error"]) == ("queued", "manual", None, None)
    assert response["Location"] == f"/api/threads/{thread.thread_id}/compress/jobs/{job['id']}"
    assert not_started == [job["id"]]
    # Queued holds the thread: a second compression and a message are refused at once.
    assert _compress(client, thread).json()["code"] == "thread_busy"
    sent = client.post(
        f"/api/threads/{thread.thread_id}/messages", {"content": "hi"}, content_type="application/json"
    )
    assert (sent.status_code, sent.json()["code"]) == (409, "thread_busy")

    compress_job_perform(job_id=job["id"])

    done = client.get(response["Location"]).json()
    assert (done["status"], done["attempts"]) == ("succeeded", 1)
    assert done["result"]["status"] == "completed" and done["result"]["compressed_messages"] > 0
    assert done["finished_at"] is not None
    assert repository_for(thread).get_values()["_summarization_event"]["cutoff_index"] > 0


def test_wait_answers_the_result_when_the_job_ends_in_time(client, user, thread, summarizer):
    summarizer(SUMMARY)
    client.force_login(user)
    response = _compress(client, thread, "?wait=true")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "completed"
    job = client.get(response["Location"]).json()
    assert job["status"] == "succeeded" and job["result"] == response.json()


def test_wait_gives_up_after_its_timeout_with_202(client, user, thread, settings, not_started):
    settings.COMPRESSION_WAIT_SECONDS = 0.2
    client.force_login(user)
    response = _compress(client, thread, "?wait=true")
    assert response.status_code == 202 and response.json()["status"] == "queued"
    assert "Location" in response


def test_a_failed_job_answers_its_error_with_wait_and_leaves_the_thread(client, user, thread, summarizer):
    summarizer(RuntimeError("model exploded"))  # a failed call (a refused answer is replaced: issue 37)
    before = repository_for(thread).get_values()
    client.force_login(user)
    response = _compress(client, thread, "?wait=true")
    assert response.status_code == 502 and response.json()["code"] == "summary_failed"
    job = CompressionJob.objects.get()
    assert (job.status, job.error_code) == ("failed", "summary_failed")
    after = repository_for(thread).get_values()
    assert after["messages"] == before["messages"] and "_summarization_event" not in after


def test_a_replay_after_completion_returns_the_same_job_without_a_second_summary(
    client, user, thread, summarizer
):
    model = summarizer(SUMMARY, SUMMARY)
    client.force_login(user)
    first = _compress(client, thread, **{"Idempotency-Key": "k1"}).json()
    again = _compress(client, thread, **{"Idempotency-Key": "k1"}).json()
    assert again["id"] == first["id"] and again["status"] == "succeeded"
    assert again["result"] == first["result"] and again["result"]["status"] == "completed"
    waited = _compress(client, thread, "?wait=true", **{"Idempotency-Key": "k1"})
    assert waited.status_code == 200 and waited.json() == first["result"]
    assert waited["Location"].endswith(f"/compress/jobs/{first['id']}")
    assert len(model.summary_prompts) == 1


def test_stop_before_the_job_starts_cancels_it_and_the_worker_skips_it(client, user, thread, not_started):
    before = repository_for(thread).get_values()
    client.force_login(user)
    job = _compress(client, thread).json()
    stopped = client.post(f"/api/threads/{thread.thread_id}/compress/jobs/{job['id']}/cancel")
    assert stopped.status_code == 200 and stopped.json()["status"] == "cancelled"
    assert stopped.json()["error"]["code"] == "job_cancelled"
    assert compress_job_perform(job_id=job["id"]).status == "cancelled"
    assert repository_for(thread).get_values() == before
    # The thread is free again.
    assert _compress(client, thread).status_code == 202


def test_stop_after_the_end_is_409_and_unknown_jobs_are_404(client, user, other_user, thread, summarizer):
    summarizer(SUMMARY)
    client.force_login(user)
    job = _compress(client, thread).json()
    assert job["status"] == "succeeded"
    late = client.post(f"/api/threads/{thread.thread_id}/compress/jobs/{job['id']}/cancel")
    assert (late.status_code, late.json()["code"]) == (409, "job_finished")
    for path in (f"compress/jobs/{job['id'] + 1}", "compress/jobs/99999999999999999999", "compress/jobs/0"):
        missing = client.get(f"/api/threads/{thread.thread_id}/{path}")
        assert missing.status_code in (404, 422) and {"code", "message"} <= missing.json().keys()
    client.force_login(other_user)
    foreign = client.get(f"/api/threads/{thread.thread_id}/compress/jobs/{job['id']}")
    assert foreign.status_code == 404


def test_a_job_whose_worker_died_is_retried_once_then_failed(user, thread, summarizer, settings):
    summarizer(SUMMARY)
    settings.RUN_LEASE_SECONDS = 60
    stale = timezone.now() - timedelta(seconds=61)
    job = CompressionJob.objects.create(
        conversation=thread,
        requested_by=user,
        trigger="manual",
        status="running",
        worker="elsewhere:1:a",
        attempts=1,
        started_at=stale,
        heartbeat_at=stale,
    )
    fresh = timezone.now() - timedelta(seconds=30)
    CompressionJob.objects.filter(pk=job.pk).update(heartbeat_at=fresh)
    nothing = {"queued": [], "failed": [], "started": []}
    assert compress_jobs_recover(start=False) == nothing  # its holder may be alive

    CompressionJob.objects.filter(pk=job.pk).update(heartbeat_at=stale)
    assert compress_jobs_recover(start=False) == {"queued": [job.pk], "failed": [], "started": [job.pk]}
    job.refresh_from_db()
    assert (job.status, job.worker) == ("queued", "")

    CompressionJob.objects.filter(pk=job.pk).update(status="running", attempts=2, worker="elsewhere:2:b")
    assert compress_jobs_recover(start=False) == {"queued": [], "failed": [job.pk], "started": []}
    job.refresh_from_db()
    assert (job.status, job.error_code) == ("failed", "worker_lost")
    assert "_summarization_event" not in repository_for(thread).get_values()


def test_a_requeued_job_is_performed_again_to_its_end(user, thread, summarizer):
    summarizer(SUMMARY)
    stale = timezone.now() - timedelta(hours=1)
    job = CompressionJob.objects.create(
        conversation=thread,
        trigger="manual",
        status="running",
        worker="elsewhere:1:a",
        attempts=1,
        heartbeat_at=stale,
    )
    compress_jobs_recover()  # re-queued and started (inline under tests)
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("succeeded", 2)


def test_a_job_queued_for_a_lease_whose_start_was_lost_is_started_again(
    user, thread, summarizer, not_started
):
    summarizer(SUMMARY)
    job = CompressionJob.objects.create(conversation=thread, requested_by=user, trigger="manual")
    assert compress_jobs_recover(start=False)["started"] == []  # young: its start may be on its way
    CompressionJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert compress_jobs_recover(start=False)["started"] == [job.pk]


def test_a_job_failed_as_worker_lost_leaves_a_compression_record(user, thread, summarizer):
    """The audit misses no job (issue 41, item 5): the second loss of a worker is a failed record."""
    from compression.models import CompressionRecord

    stale = timezone.now() - timedelta(hours=1)
    job = CompressionJob.objects.create(
        conversation=thread,
        requested_by=user,
        trigger="manual",
        status="running",
        worker="elsewhere:2:b",
        attempts=2,
        started_at=stale,
        heartbeat_at=stale,
    )
    assert compress_jobs_recover(start=False)["failed"] == [job.pk]
    job.refresh_from_db()
    record = job.record
    assert record is not None and job.error_code == "worker_lost"
    assert record.status == CompressionRecord.Status.FAILED and record.error == job.error
    assert record.conversation_id == thread.pk and record.requested_by == user and record.trigger == "manual"
    assert "worker_lost" in record.error_detail
    assert list(CompressionRecord.objects.filter(conversation=thread)) == [record]
    # Taken again by nobody: a second pass changes nothing and writes no second record.
    assert compress_jobs_recover(start=False)["failed"] == []
    assert CompressionRecord.objects.filter(conversation=thread).count() == 1


class _WorkerDied(BaseException):
    """Stands for a SIGKILL: nothing of the job's own error handling runs."""


def _history_sections(thread) -> int:
    from agent_platform.workdir import workdir_for

    workdir = workdir_for(thread)
    paths = [p for p in workdir_files(thread) if "conversation_history" in p]
    return sum(workdir.read_text(p).count("## Summarized at ") for p in paths)


def test_a_job_killed_between_its_history_write_and_its_apply_leaves_no_orphan_section(
    user, thread, summarizer, monkeypatch
):
    """Issue 41, item 5: the section is noted on the job before the apply; recovery takes it back, and
    the retried job leaves exactly one section, the applied one."""
    from compression.services import jobs

    summarizer(SUMMARY)
    seed_state(thread, conversation_messages(5))
    apply = jobs._apply

    def die(*args, **kwargs):
        raise _WorkerDied()

    monkeypatch.setattr(jobs, "_apply", die)
    job = CompressionJob.objects.create(conversation=thread, requested_by=user, trigger="manual")
    with pytest.raises(_WorkerDied):
        jobs.compress_job_perform(job_id=job.pk)
    assert _history_sections(thread) == 1  # written, never applied: an orphan until recovery
    job.refresh_from_db()
    assert job.status == "running" and "pending_history" in job.result
    stale = timezone.now() - timedelta(hours=1)
    CompressionJob.objects.filter(pk=job.pk).update(worker="elsewhere:1:a", heartbeat_at=stale)

    monkeypatch.setattr(jobs, "_apply", apply)
    assert compress_jobs_recover(start=False)["queued"] == [job.pk]
    assert _history_sections(thread) == 0  # taken back
    assert jobs.compress_job_perform(job_id=job.pk).status == "succeeded"
    assert _history_sections(thread) == 1  # the applied one, once
    job.refresh_from_db()
    assert "pending_history" not in job.result and job.result["status"] == "completed"
