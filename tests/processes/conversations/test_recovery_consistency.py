"""After a recovery the transcript equals the checkpoint: a run taken back from a worker that died
mid-tool answers the open call "[Not executed: …]" in both stores, through the one message path."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from agent_platform.models import Agent, ModelEndpoint
from conversations.models import AgentRun
from conversations.services import message_intake, thread_create
from conversations.services.closing import EARLIER_ATTEMPT_STOPPED, NOT_EXECUTED
from conversations.services.dispatch import run_execute
from conversations.services.threads import NewMessage, message_append
from tests.compression._threads import repository_for
from tests.conversations.consistency import assert_transcript_equals_checkpoint
from tests.processes.support import celery_worker, tasks_sent_to
from tests.support.slow_search import slow_search

ANSWERED = NOT_EXECUTED.format(reason=EARLIER_ATTEMPT_STOPPED)


def _wait_for(predicate, timeout: float = 90.0, what=lambda: "condition"):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what()}"
        time.sleep(0.1)
    return value


@pytest.mark.services
@pytest.mark.django_db
def test_a_run_retaken_after_its_worker_died_mid_tool_answers_the_call_in_both_stores(
    thread, user, scripted_model, django_capture_on_commit_callbacks
):
    scripted_model("after the crash")
    with django_capture_on_commit_callbacks(execute=False):
        run = message_intake(thread_id=thread.thread_id, user=user, content="search it").run
    user_message = run.input_message
    # What the dead attempt left: its call checkpointed and transcribed, the tool never returned.
    call = AIMessage("", id="a1", tool_calls=[{"id": "call-1", "name": "ls", "args": {}}])
    repository_for(thread).update(
        {"messages": [HumanMessage("search it", id=user_message.lc_message_id), call]}
    )
    message_append(conversation=thread, message=NewMessage(
        role="assistant", content="", run=run, lc_message_id="a1",
        tool_calls=[{"id": "call-1", "name": "ls", "args": {}}],
    ))  # fmt: skip
    AgentRun.objects.filter(pk=run.pk).update(attempts=1)  # re-queued by recovery

    run_execute(run_id=run.pk)

    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    transcript = assert_transcript_equals_checkpoint(thread)
    assert transcript[:2] == [("a1", ""), ("not-executed-call-1", ANSWERED)]
    assert transcript[-1][1] == "after the crash"


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
def test_a_celery_worker_killed_mid_tool_leaves_transcript_and_checkpoint_equal(
    user, stub_agent, openai_stub, tmp_path, settings
):
    openai_stub.tool_call("web_search", {"query": "slow"}, call_id="call-search")
    openai_stub.reply("the answer after the crash")
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    settings.RUN_EXECUTION = "celery"
    with (
        slow_search(delay=60) as search,
        celery_worker(
            tmp_path, RUN_LEASE_SECONDS="3", STUB_API_KEY="sk-test",
            TEST_WEB_SEARCH_BASE_URL=search.base_url, TEST_WEB_SEARCH_API_KEY="search-key",
        ) as worker,
        tasks_sent_to(worker.queue),
    ):  # fmt: skip
        run = message_intake(thread_id=thread.thread_id, user=user, content="search it").run
        assert search.received.wait(90), worker.text()[-3000:]
        run.refresh_from_db()
        os.kill(int(run.worker.rpartition(":")[2]), signal.SIGKILL)  # the pool child, inside the tool

        _wait_for(
            lambda: AgentRun.objects.filter(pk=run.pk, status__in=["succeeded", "failed"]).exists(),
            what=lambda: f"the retaken run to end; worker log:\n{worker.text()[-3000:]}",
        )
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("succeeded", 2), run.error
    transcript = assert_transcript_equals_checkpoint(thread)
    assert ("not-executed-call-search", ANSWERED) in transcript
    assert transcript[-1][1] == "the answer after the crash"


# A thread whose message waits for a server to start it: the agent searches (slowly) first.
SEED = """
from django.contrib.auth import get_user_model
from agent_platform.models import Agent, ModelEndpoint
from conversations.models import AgentRun
from conversations.services import thread_create
from conversations.services.threads import NewMessage, message_append

user = get_user_model().objects.create_user("killed", password="pw-killed-123")
endpoint = ModelEndpoint.objects.create(name="stub", base_url="{base_url}", api_key_env="STUB_API_KEY")
Agent.objects.create(name="Searcher", slug="searcher", endpoint=endpoint, model_name="gpt-4o-mini",
                     tools=["web_search"])
thread = thread_create(user=user, agent_slug="searcher")
message = message_append(conversation=thread, message=NewMessage(role="user", content="search it",
                                                                  lc_message_id="m-search"))
AgentRun.objects.create(conversation=thread, input_message=message)
"""
# Both stores of that thread, as JSON: (id, text) of every reply and tool result, and the run.
READ_BACK = """
import json
from conversations.models import AgentRun, Conversation
from tests.conversations.consistency import model_visible, transcribed
thread = Conversation.objects.get()
run = AgentRun.objects.get()
print(json.dumps({"status": run.status, "attempts": run.attempts, "checkpoint": model_visible(thread),
                  "transcript": transcribed(thread)}))
"""


def test_a_server_killed_mid_tool_leaves_transcript_and_checkpoint_equal(openai_stub, tmp_path):
    import json
    import subprocess
    import sys

    from tests.processes.support import ROOT, daphne_server

    openai_stub.tool_call("web_search", {"query": "slow"}, call_id="call-search")
    openai_stub.reply("the answer after the restart")
    with slow_search(delay=60) as search:
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")
        }
        env.update(
            DJANGO_SETTINGS_MODULE="tests.e2e.settings", E2E_DIR=str(tmp_path), RUN_RECOVERY_TIMER="1",
            STUB_API_KEY="sk-test", TEST_WEB_SEARCH_BASE_URL=search.base_url, TEST_WEB_SEARCH_API_KEY="search-key",
        )  # fmt: skip
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
        seed = SEED.replace("{base_url}", openai_stub.base_url)
        subprocess.run([*manage, "shell", "-c", seed], cwd=ROOT, env=env, check=True)

        with daphne_server(tmp_path, env=env, name="first"):
            assert search.received.wait(90), "the first server never reached the tool"
            server = next(p for p in _children() if "daphne" in p[1])
            os.kill(server[0], signal.SIGKILL)  # dies inside the tool call

        def read_back() -> dict:
            out = subprocess.run([*manage, "shell", "-c", READ_BACK], cwd=ROOT, env=env, check=True,
                                 capture_output=True, text=True).stdout  # fmt: skip
            return json.loads(out.strip().splitlines()[-1])

        with daphne_server(tmp_path, env=env, name="second"):
            state = _wait_for(lambda: (s := read_back())["status"] in ("succeeded", "failed") and s)
    assert (state["status"], state["attempts"]) == ("succeeded", 2)
    assert state["transcript"] == state["checkpoint"]
    assert ["not-executed-call-search", ANSWERED] in state["transcript"]
    assert state["transcript"][-1][1] == "the answer after the restart"


def _children() -> list[tuple[int, str]]:
    """(pid, command line) of this process's children."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.append(
                    (int(stat.parent.name), (stat.parent / "cmdline").read_text().replace("\0", " "))
                )
        except (OSError, ValueError, IndexError):
            continue
    return found
