"""Graph assembly, the thread checkpointer and the state repository."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from langchain_core.messages import HumanMessage

from agent_platform.runtime import checkpointer as cp
from agent_platform.runtime.graph import agent_tools, build_agent_graph, thread_config
from agent_platform.runtime.offline import OfflineChatModel
from agent_platform.runtime.state_repository import AgentStateRepository, CheckpointMoved, _Expecting
from agent_platform.runtime.stopping import ToolBudgetMiddleware
from agent_platform.workdir import workdir_for

pytestmark = pytest.mark.django_db


def test_state_survives_a_rebuilt_graph_through_the_checkpointer(thread):
    build_agent_graph(agent=thread.agent).invoke({"messages": [HumanMessage("hello")]}, thread_config(thread))
    again = build_agent_graph(agent=thread.agent)
    values = AgentStateRepository(again, thread.thread_id).get_values()
    assert [m.type for m in values["messages"]] == ["human", "ai"]


def test_the_state_repository_refuses_a_graph_without_checkpointer(thread):
    graph = build_agent_graph(agent=thread.agent, checkpointer=None)
    with pytest.raises(ValueError, match="checkpointer"):
        AgentStateRepository(graph, thread.thread_id)


def test_the_state_repository_writes_through_the_graph(thread):
    graph = build_agent_graph(agent=thread.agent)
    repository = AgentStateRepository(graph, thread.thread_id)
    repository.update({"messages": [HumanMessage("note", id="n1")]})
    assert [m.id for m in repository.get_values()["messages"]] == ["n1"]


def test_tools_follow_the_agent_and_sub_agents_get_no_task_or_ask_user(thread, agent):
    names = [t.name for t in agent_tools(agent=agent, model=OfflineChatModel())]
    assert "task" in names and "ask_user" in names
    sub = agent_tools(agent=agent, model=OfflineChatModel(), subagent=True)
    assert {"task", "ask_user"}.isdisjoint(t.name for t in sub)
    assert "search_history" in [t.name for t in sub]  # sub-agents search the thread's history too
    agent.tools = ["ls"]
    assert [t.name for t in agent_tools(agent=agent, model=OfflineChatModel())] == ["ls", "search_history"]


def test_the_checkpointer_is_reopened_after_a_fork(monkeypatch):
    first = cp.checkpointer_get()
    assert cp.checkpointer_get() is first
    monkeypatch.setattr(cp.os, "getpid", lambda: -1)  # as in a Celery prefork child
    child = cp.checkpointer_get()
    assert child is not first
    monkeypatch.undo()
    cp.checkpointer_close()
    assert cp.checkpointer_get() is not child
    first.conn.close()  # the "parent's" connection, left open on purpose by the fork path


def test_state_graphs_are_reused_until_the_agent_changes(thread):
    from agent_platform.runtime.graph import state_graph_for

    first = state_graph_for(thread)
    assert state_graph_for(thread) is first
    thread.agent.summary_keep_messages = 3
    thread.agent.save()
    assert state_graph_for(thread) is not first


def test_a_sub_agent_shares_the_parents_workdir_and_middleware_stack(thread, agent):
    from agent_platform.runtime.graph import agent_middleware, build_task_tool
    from agent_platform.runtime.run_scope import RunLedger, RunWorkdir
    from context_engine.middleware import CompressionMiddleware, TokenUsageMiddleware

    workdir_for(thread).write_text("parent.txt", "written by the parent")
    stack = agent_middleware(agent=agent, model=OfflineChatModel())
    assert [type(m) for m in stack] == [
        CompressionMiddleware,
        TokenUsageMiddleware,
        ToolBudgetMiddleware,
    ]
    # Nothing of a thread in the stack: the run's workdir and ledger are read from its config.
    assert isinstance(stack[0].store, RunWorkdir) and isinstance(stack[0].ledger, RunLedger)
    sub = build_agent_graph(agent=agent, model=OfflineChatModel(), subagent=True)
    assert "TokenUsageMiddleware.before_agent" in sub.nodes  # the same stack runs in the sub-agent

    task = build_task_tool(agent=agent, model=OfflineChatModel())
    assert "parent.txt" in task.invoke({"description": "list files"}, thread_config(thread))


def test_a_sub_agent_counts_its_summary_calls_in_the_parents_ledger(thread, agent, monkeypatch):
    from agent_platform.runtime import graph as runtime_graph
    from agent_platform.runtime.run_scope import RunLedger, run_scope_for
    from context_engine.summary.spend_guard import LentLedger

    seen: list = []
    current = RunLedger.current
    monkeypatch.setattr(RunLedger, "current", lambda self: seen.append(current(self)) or seen[-1])
    scope = run_scope_for(thread)  # the parent run's: the thread's ledger for this run
    task = next(
        t for t in runtime_graph.agent_tools(agent=agent, model=OfflineChatModel()) if t.name == "task"
    )
    task.invoke({"description": "list files"}, thread_config(thread, scope=scope))
    lent = seen[-1]  # what the sub-agent's compression middleware counted in
    assert isinstance(lent, LentLedger)
    lent.spent([1234], now=datetime.now(UTC))
    assert [c["input_tokens"] for c in scope.ledger.view()] == [1234]  # billed to the parent's thread


def test_a_compare_and_swap_update_writes_onto_the_expected_checkpoint_only(thread):
    repository = AgentStateRepository(build_agent_graph(agent=thread.agent), thread.thread_id)
    with pytest.raises(CheckpointMoved):  # a fresh thread has no checkpoint: "" is the only match
        repository.update({"messages": [HumanMessage("x", id="x")]}, expected_version="nope")
    assert repository.version() == ""
    repository.update({"messages": [HumanMessage("first", id="n1")]}, expected_version="")
    first = repository.version()
    repository.update({"messages": [HumanMessage("second", id="n2")]})  # another writer moves it on
    moved = repository.version()
    with pytest.raises(CheckpointMoved):
        repository.update({"messages": [HumanMessage("late", id="n3")]}, expected_version=first)
    assert repository.version() == moved  # nothing written
    assert [m.id for m in repository.get_values()["messages"]] == ["n1", "n2"]
    repository.update({"messages": [HumanMessage("third", id="n3")]}, expected_version=moved)
    assert [m.id for m in repository.get_values()["messages"]] == ["n1", "n2", "n3"]
    assert repository.version() not in ("", first, moved)


def test_a_compare_and_swap_saver_narrowed_by_strict_msgpack_still_compares(thread):
    repository = AgentStateRepository(build_agent_graph(agent=thread.agent), thread.thread_id)
    repository.update({"messages": [HumanMessage("first", id="n1")]})
    version = repository.version()
    narrowed = _Expecting(repository.graph.checkpointer, "elsewhere").with_allowlist([("x", "Y")])
    assert isinstance(narrowed, _Expecting)
    with pytest.raises(CheckpointMoved):
        narrowed.get_tuple(repository.config)
    assert _Expecting(repository.graph.checkpointer, version).with_allowlist([]).get_tuple(repository.config)
