"""Stop reaches a tool that waits: during a slow ``web_search`` the run ends within a second of Stop,
the call answered "stopped by the user" in checkpoint and transcript, in-process and on Celery."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from langchain_core.messages import AIMessage

from agent_platform.models import Agent, ModelEndpoint
from conversations.models import AgentRun
from conversations.services import message_intake, run_cancel, thread_create
from conversations.services.closing import CANCELLED_TOOL_RESULT
from tests.conversations.consistency import assert_transcript_equals_checkpoint
from tests.processes.support import celery_worker, tasks_sent_to
from tests.support.slow_search import slow_search

SEARCH_SECONDS = 12  # the probe's slow search
STOP_WITHIN = 1.0


def _ended_after_stop(run: AgentRun, timeout: float = 30.0) -> float:
    """Seconds from Stop until the run left ``running``."""
    stopped_at = time.monotonic()
    deadline = stopped_at + timeout
    while AgentRun.objects.filter(pk=run.pk, status="running").exists():
        assert time.monotonic() < deadline, "the run did not end after Stop"
        time.sleep(0.02)
    return time.monotonic() - stopped_at


def _assert_answered_as_stopped(thread, call_id: str) -> None:
    transcript = assert_transcript_equals_checkpoint(thread)
    assert (f"cancelled-{call_id}", CANCELLED_TOOL_RESULT) in transcript
    assert "stopped" in CANCELLED_TOOL_RESULT


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_stop_during_a_slow_search_ends_an_in_process_run_within_a_second(
    thread, user, agent, settings, scripted_model
):
    settings.RUN_EXECUTION = "inprocess"
    agent.tools = ["web_search"]
    agent.save()
    call = AIMessage("", tool_calls=[{"id": "call-search", "name": "web_search", "args": {"query": "slow"}}])
    model = scripted_model(call, "never reached")
    with slow_search(delay=SEARCH_SECONDS) as search:
        settings.WEB_SEARCH_BASE_URL, settings.WEB_SEARCH_API_KEY = search.base_url, "search-key"
        run = message_intake(thread_id=thread.thread_id, user=user, content="search it").run
        assert search.received.wait(30)
        run_cancel(thread_id=thread.thread_id, user=user)
        took = _ended_after_stop(run)
    connection.close()
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert took < STOP_WITHIN, f"the run ended {took:.2f} s after Stop"
    assert len(model.calls) == 1  # the model was not called again after the stop
    _assert_answered_as_stopped(thread, "call-search")


@pytest.fixture
def stub_agent(openai_stub, monkeypatch):
    monkeypatch.setenv("STUB_API_KEY", "sk-test")
    endpoint = ModelEndpoint.objects.create(
        name="stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY"
    )
    return Agent.objects.create(
        name="Searcher", slug="searcher", endpoint=endpoint, model_name="gpt-4o-mini", tools=["web_search"]
    )


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_stop_during_a_slow_search_ends_a_celery_run_within_a_second(
    user, stub_agent, openai_stub, tmp_path, settings
):
    openai_stub.tool_call("web_search", {"query": "slow"}, call_id="call-search")
    openai_stub.reply("the queued message is answered")
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    settings.RUN_EXECUTION = "celery"
    with (
        slow_search(delay=SEARCH_SECONDS) as search,
        celery_worker(
            tmp_path, STUB_API_KEY="sk-test", TEST_WEB_SEARCH_BASE_URL=search.base_url,
            TEST_WEB_SEARCH_API_KEY="search-key",
        ) as worker,
        tasks_sent_to(worker.queue),
    ):  # fmt: skip
        run = message_intake(thread_id=thread.thread_id, user=user, content="search it").run
        assert search.received.wait(90), worker.text()[-3000:]
        run_cancel(thread_id=thread.thread_id, user=user)
        took = _ended_after_stop(run)
        run.refresh_from_db()
        assert run.status == "cancelled", worker.text()[-3000:]
    assert took < STOP_WITHIN, f"the run ended {took:.2f} s after Stop"
    assert len(openai_stub.requests) == 1
    _assert_answered_as_stopped(thread, "call-search")


def _slow_history_search(thread, monkeypatch, *, per_line: float) -> list[str]:
    """``search_history`` over 120 lines of history, each read ``per_line`` seconds apart (the probe's
    slow per-line tool); returns the lines read so far."""
    from agent_platform.tools import history_search
    from agent_platform.workdir import workdir_for

    workdir_for(thread).write_text(
        "outputs/conversation_history/session_1.md", "".join(f"line {n}\n" for n in range(120))
    )
    read: list[str] = []
    real_split = history_search.split_lines

    def slow_lines(text):
        for line in real_split(text):
            read.append(line)
            time.sleep(per_line)
            yield line

    monkeypatch.setattr(history_search, "split_lines", slow_lines)
    return read


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_stop_inside_a_slow_per_line_tool_ends_the_run_within_a_second(
    thread, user, agent, settings, scripted_model, monkeypatch
):
    """Issue 38: 120 slow lines took 250 s to stop; the budget's watcher and the tool's own check end it."""
    settings.RUN_EXECUTION = "inprocess"
    assert "context_compression" in agent.capabilities  # search_history is every agent's by default
    read = _slow_history_search(thread, monkeypatch, per_line=2.0)
    call = AIMessage("", tool_calls=[{"id": "call-grep", "name": "search_history", "args": {"pattern": "x"}}])
    model = scripted_model(call, "never reached")
    run = message_intake(thread_id=thread.thread_id, user=user, content="search it").run
    deadline = time.monotonic() + 30
    while not read:
        assert time.monotonic() < deadline, "the search never started"
        time.sleep(0.02)
    run_cancel(thread_id=thread.thread_id, user=user)
    took = _ended_after_stop(run)
    connection.close()
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert took < STOP_WITHIN, f"the run ended {took:.2f} s after Stop"
    time.sleep(2.5)  # the abandoned search saw it at its next line and read no more
    assert len(read) <= 2, len(read)
    assert len(model.calls) == 1
    _assert_answered_as_stopped(thread, "call-grep")
