import uuid
from typing import TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from agent_platform.models import TOOL_NAMES
from agent_platform.tools import BUILT_HERE, build_tools
from agent_platform.tools.ask_user import build_ask_user_tool
from agent_platform.workdir import Workdir


class State(TypedDict, total=False):
    answer: str


def test_ask_user_interrupts_and_returns_the_resumed_answer():
    ask_user = build_ask_user_tool()

    def node(state: State) -> State:
        return {"answer": ask_user.invoke({"question": "Which budget, 50K or 100K?"})}

    builder = StateGraph(State)
    builder.add_node("ask", node)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}

    paused = graph.invoke({}, config)
    assert [item.value for item in paused["__interrupt__"]] == [{"question": "Which budget, 50K or 100K?"}]
    assert graph.get_state(config).next == ("ask",)

    resumed = graph.invoke(Command(resume="100K, please"), config)
    assert resumed["answer"] == "100K, please"

    other = {"configurable": {"thread_id": "t2"}}
    graph.invoke({}, other)
    assert graph.invoke(Command(resume={"answer": "50K"}), other)["answer"] == "50K"


@pytest.mark.django_db
def test_build_tools_returns_the_enabled_tools_with_model_names(agent, settings, tmp_path):
    from agent_platform.knowledge.models import KnowledgeBase
    from agent_platform.knowledge.services import document_ingest

    settings.WORKDIR_ROOT = tmp_path
    # Every tool can work here: a search provider and something to search (else they are left out).
    settings.WEB_SEARCH_BASE_URL, settings.WEB_SEARCH_API_KEY = "http://search.local", "key"
    document_ingest(kb=KnowledgeBase.objects.create(name="KB", slug="kb"), title="Note", text="A note.")
    workdir = Workdir(uuid.uuid4())
    assert set(BUILT_HERE) == set(TOOL_NAMES) - {"task"}
    all_tools = build_tools(agent=agent, conversation=None, workdir=workdir)
    # The compression capability brings search_history after the admin's choice (issue 25).
    assert [tool.name for tool in all_tools] == [name for name in TOOL_NAMES if name != "task"] + [
        "search_history"
    ]
    agent.tools = ["read_file", "query_kb", "task"]
    assert [tool.name for tool in build_tools(agent=agent, conversation=None, workdir=workdir)] == [
        "read_file",
        "query_kb",
        "search_history",
    ]
    agent.tools = []
    assert [tool.name for tool in build_tools(agent=agent, conversation=None, workdir=workdir)] == [
        "search_history"
    ]
    agent.capabilities = []
    assert build_tools(agent=agent, conversation=None, workdir=workdir) == []
