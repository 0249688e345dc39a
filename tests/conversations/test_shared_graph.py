"""One compiled agent graph serves every thread of its configuration: two users' runs at once on the
same graph each see their own thread's files, messages and ledger, never the other's (issue 30 item 8)."""

from __future__ import annotations

import threading
import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent_platform.runtime import graph as runtime_graph
from agent_platform.workdir import workdir_for
from conversations.models import AgentRun
from conversations.services import message_intake, thread_create
from tests.conversations.conftest import ScriptedChatModel

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


class FileWritingModel(ScriptedChatModel):
    """Per thread (told apart by its user's message): writes the message to ``mine.txt``, lists the
    workdir, then answers with what it listed. The first calls of ``together`` threads meet at a
    barrier, so their runs are inside the shared graph at the same time."""

    together: threading.Barrier | None = None

    def _next(self, messages):
        self.calls.append(list(messages))
        mine = next(m.content for m in reversed(messages) if isinstance(m, HumanMessage))
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if not results:
            self.together.wait()
            call = {"name": "write_file", "args": {"path": "mine.txt", "content": mine}, "id": f"w-{mine}"}
            return AIMessage(content="", tool_calls=[call])
        if len(results) == 1:
            return AIMessage(
                content="", tool_calls=[{"name": "ls", "args": {"path": "."}, "id": f"l-{mine}"}]
            )
        return AIMessage(content=f"listed: {results[-1].content}")


def _wait_idle(threads, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while AgentRun.objects.filter(conversation__in=threads, status__in=AgentRun.ACTIVE_STATUSES).exists():
        assert time.monotonic() < deadline, "the runs did not end"
        time.sleep(0.05)


def test_two_users_runs_at_once_on_one_cached_graph_keep_their_own_files_and_messages(
    user, other_user, agent, settings, monkeypatch
):
    settings.RUN_EXECUTION = "inprocess"  # each run on a thread of its own, in this process
    model = FileWritingModel(script=[], calls=[], together=threading.Barrier(2, timeout=15))
    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
    served: list = []
    graph_for = runtime_graph.agent_graph_for
    monkeypatch.setattr(
        "conversations.services.execution.agent_graph_for",
        lambda a, **kw: served.append(graph_for(a, **kw)) or served[-1],
    )
    runtime_graph.agent_graphs_clear()
    alice = thread_create(user=user, agent_slug=agent.slug, title="alice's")
    bob = thread_create(user=other_user, agent_slug=agent.slug, title="bob's")

    message_intake(thread_id=alice.thread_id, user=user, content="alice-secret")
    message_intake(thread_id=bob.thread_id, user=other_user, content="bob-secret")
    _wait_idle([alice, bob])

    assert len(served) == 2 and served[0] is served[1]  # one compiled graph served both runs
    for conversation, mine, theirs in (
        (alice, "alice-secret", "bob-secret"),
        (bob, "bob-secret", "alice-secret"),
    ):
        run = AgentRun.objects.get(conversation=conversation)
        assert run.status == AgentRun.Status.SUCCEEDED, run.error_detail
        assert workdir_for(conversation).read_text("mine.txt") == mine
        transcript = " ".join(conversation.messages.order_by("seq").values_list("content", flat=True))
        assert mine in transcript and theirs not in transcript
        checkpoint = runtime_graph.state_repository_for(conversation).get_values()["messages"]
        assert not any(theirs in str(m.content) for m in checkpoint)
        assert checkpoint[-1].content == "listed: mine.txt"  # its own workdir holds one file


def test_the_cached_graph_is_rebuilt_when_the_agent_or_its_tools_change(agent, thread, settings):
    runtime_graph.agent_graphs_clear()
    first = runtime_graph.agent_graph_for(agent)
    assert runtime_graph.agent_graph_for(agent) is first
    agent.system_prompt = "Be brief."
    agent.save()
    second = runtime_graph.agent_graph_for(agent)
    assert second is not first and runtime_graph.agent_graph_for(agent) is second
    settings.WEB_SEARCH_BASE_URL, settings.WEB_SEARCH_API_KEY = "http://search.local", "key"
    agent.tools = ["web_search", "ls"]
    agent.save()
    with_search = runtime_graph.agent_graph_for(agent)
    settings.WEB_SEARCH_API_KEY = ""  # the provider goes away: web_search can no longer work
    assert runtime_graph.agent_graph_for(agent) is not with_search


def test_the_cached_graph_is_rebuilt_when_the_agents_endpoint_changes(agent, openai_stub):
    from agent_platform.models import ModelEndpoint

    endpoint = ModelEndpoint.objects.create(name="Stub", base_url=openai_stub.base_url, default_model="m1")
    agent.endpoint = endpoint
    agent.save()
    runtime_graph.agent_graphs_clear()
    first = runtime_graph.agent_graph_for(agent)
    assert runtime_graph.agent_graph_for(agent) is first
    ModelEndpoint.objects.get(pk=endpoint.pk).save()  # saved in the admin: a new version of the row
    agent.refresh_from_db()  # a run reads its agent and endpoint afresh
    assert runtime_graph.agent_graph_for(agent) is not first


def test_the_offline_agent_has_a_graph_per_language_a_providers_agent_one_for_all(agent, openai_stub):
    from agent_platform.models import ModelEndpoint

    runtime_graph.agent_graphs_clear()
    assert runtime_graph.agent_graph_for(agent, language="zh-hans") is not runtime_graph.agent_graph_for(
        agent, language="en"
    )
    agent.endpoint = ModelEndpoint.objects.create(
        name="Stub", base_url=openai_stub.base_url, default_model="m1"
    )
    agent.save()
    agent.refresh_from_db()
    assert runtime_graph.agent_graph_for(agent, language="zh-hans") is runtime_graph.agent_graph_for(
        agent, language="en"
    )


def test_runs_that_start_together_build_the_graph_once(agent):
    from django.db import connection

    runtime_graph.agent_graphs_clear()
    start, got = threading.Barrier(4, timeout=15), []

    def run_starts() -> None:
        try:
            start.wait()
            got.append(runtime_graph.agent_graph_for(agent))
        finally:
            connection.close()

    workers = [threading.Thread(target=run_starts) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert len(got) == 4 and all(graph is got[0] for graph in got)
