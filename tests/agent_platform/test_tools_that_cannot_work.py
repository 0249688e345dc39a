"""Tools that cannot work are flagged (issue 27, item 4): ``web_search`` without a search provider and
``query_kb`` with nothing to search get a warning on the agent form and are left out of the tools the
model is offered at run time."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agent_platform.knowledge.models import KnowledgeBase
from agent_platform.knowledge.services import document_ingest
from agent_platform.models import Agent
from agent_platform.runtime.graph import agent_tools, build_agent_graph, thread_config
from agent_platform.runtime.offline import OfflineChatModel
from agent_platform.tools import build_tools, tools_unavailable
from agent_platform.tools.web_search import TavilyProvider
from agent_platform.workdir import workdir_for
from conversations.services import thread_create

pytestmark = pytest.mark.django_db

NO_PROVIDER = "web_search needs a search provider: WEB_SEARCH_BASE_URL / WEB_SEARCH_API_KEY not set."
NOTHING_TO_SEARCH = "query_kb has nothing to search: no knowledge base holds a document."


@pytest.fixture
def no_search(settings):
    settings.WEB_SEARCH_BASE_URL = ""
    settings.WEB_SEARCH_API_KEY = ""


def _knowledge():
    kb = KnowledgeBase.objects.create(name="Policies", slug="policies")
    document_ingest(kb=kb, title="Refunds", text="Refunds are paid within 14 days.")


def _names(tools) -> list[str]:
    return [tool.name for tool in tools]


def test_the_reasons_name_what_is_missing(no_search, settings):
    assert tools_unavailable(["web_search", "query_kb", "ls"]) == {
        "web_search": NO_PROVIDER,
        "query_kb": NOTHING_TO_SEARCH,
    }
    settings.WEB_SEARCH_BASE_URL = "http://search.local"
    assert tools_unavailable(["web_search"]) == {
        "web_search": "web_search needs a search provider: WEB_SEARCH_API_KEY not set."
    }
    settings.WEB_SEARCH_API_KEY = "k"
    _knowledge()
    assert tools_unavailable(["web_search", "query_kb"]) == {}


def test_tools_that_cannot_work_are_left_out_at_run_time(no_search, thread, agent):
    tools = agent_tools(agent=agent, model=OfflineChatModel())
    assert "web_search" not in _names(tools) and "query_kb" not in _names(tools)
    assert {"ls", "read_file", "write_file", "edit_file", "ask_user", "task"} <= set(_names(tools))


def test_they_come_back_once_they_can_work(settings, thread, agent):
    settings.WEB_SEARCH_BASE_URL, settings.WEB_SEARCH_API_KEY = "http://search.local", "key"
    _knowledge()
    tools = build_tools(agent=agent, workdir=workdir_for(thread))
    assert _names(tools)[:2] == ["query_kb", "web_search"]


def test_an_injected_provider_makes_web_search_work(no_search, thread, agent):
    provider = TavilyProvider(base_url="http://search.local", api_key="k")
    tools = build_tools(agent=agent, workdir=workdir_for(thread), web_search_provider=provider)
    assert "web_search" in _names(tools)


def test_the_model_is_never_offered_a_tool_that_cannot_work(no_search, user, agent, openai_stub):
    from agent_platform.models import ModelEndpoint

    endpoint = ModelEndpoint.objects.create(
        name="Stub", base_url=openai_stub.base_url, default_model="gpt-4o-mini"
    )
    agent.endpoint, agent.model_name = endpoint, ""
    agent.save()
    conversation = thread_create(user=user, agent_slug=agent.slug)
    openai_stub.reply("Hello.")
    graph = build_agent_graph(agent=agent, checkpointer=None)
    graph.invoke({"messages": [("user", "hi")]}, thread_config(conversation))
    offered = {tool["function"]["name"] for tool in openai_stub.requests[-1]["tools"]}
    assert "web_search" not in offered and "query_kb" not in offered and "read_file" in offered


def test_the_agent_form_warns_and_saving_says_so_again(no_search, client, admin_user, agent):
    from tests.agent_platform.test_admin import _form_data

    client.force_login(admin_user)
    url = reverse("admin:agent_platform_agent_change", args=[agent.pk])
    page = client.get(url).content.decode()
    assert "Tools that cannot work here" in page
    assert NO_PROVIDER in page and NOTHING_TO_SEARCH in page
    assert "left out of the agent&#x27;s tools at run time" in page
    response = client.post(url, _form_data(agent, description="x"), follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert f"{NO_PROVIDER} It is left out of the agent's tools." in shown


def test_no_warning_when_every_enabled_tool_can_work(no_search, client, admin_user):
    agent = Agent.objects.create(name="Files only", slug="files", tools=["ls", "read_file"])
    client.force_login(admin_user)
    page = client.get(reverse("admin:agent_platform_agent_change", args=[agent.pk])).content.decode()
    assert "Tools that cannot work here" not in page
