"""The tools the platform ships (SPEC §2.2), built per run for one agent and one thread.

``task`` is not built here: it needs graph assembly, so the runtime adds it. A tool that cannot work
here (``tools_unavailable``: no search provider, nothing to search) is left out of the model's tools,
and the agent's admin form says so.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.utils.translation import gettext as _
from langchain_core.tools import BaseTool

from agent_platform.knowledge.selectors import kb_searchable
from agent_platform.tools.ask_user import build_ask_user_tool
from agent_platform.tools.files import PageSize, build_file_tools
from agent_platform.tools.history_search import build_search_history_tool
from agent_platform.tools.knowledge import build_query_kb_tool
from agent_platform.tools.web_search import WebSearchProvider, build_web_search_tool, configured_provider
from agent_platform.workdir import Workdir
from context_engine.config import COMPRESSION_CAPABILITY

BUILT_HERE = ("query_kb", "web_search", "ls", "read_file", "write_file", "edit_file", "ask_user")


def tools_unavailable(
    names: Iterable[str], *, web_search_provider: WebSearchProvider | None = None
) -> dict[str, str]:
    """Of the tool ``names``, those that cannot work on this server, each with the reason in words."""
    names = set(names)
    problems: dict[str, str] = {}
    if "web_search" in names and web_search_provider is None and configured_provider() is None:
        missing = [n for n in ("WEB_SEARCH_BASE_URL", "WEB_SEARCH_API_KEY") if not getattr(settings, n)]
        problems["web_search"] = _("web_search needs a search provider: %(names)s not set.") % {
            "names": " / ".join(missing)
        }
    if "query_kb" in names and not kb_searchable():
        problems["query_kb"] = _("query_kb has nothing to search: no knowledge base holds a document.")
    return problems


def build_tools(
    *, agent, conversation=None, workdir: Workdir, web_search_provider: WebSearchProvider | None = None
) -> list[BaseTool]:
    """The agent's enabled tools among ``BUILT_HERE``, in the agent's order; unknown names, and tools
    that cannot work here (``tools_unavailable``), are skipped; ``read_file`` pages fit the agent's window.
    Then ``search_history`` for an agent with
    the compression capability: what a summary folded stays searchable (issue 25)."""
    enabled = [name for name in (agent.tools or []) if name in BUILT_HERE]
    unavailable = tools_unavailable(enabled, web_search_provider=web_search_provider)
    enabled = [name for name in enabled if name not in unavailable]
    tools: dict[str, BaseTool] = {}
    if "query_kb" in enabled:
        tools["query_kb"] = build_query_kb_tool()
    if "web_search" in enabled:
        tools["web_search"] = build_web_search_tool(web_search_provider)
    if "ask_user" in enabled:
        tools["ask_user"] = build_ask_user_tool()
    file_tools = build_file_tools(workdir, page=PageSize.for_config(agent.compression_config()))
    tools.update({name: file_tools[name] for name in enabled if name in file_tools})
    chosen = [tools[name] for name in dict.fromkeys(enabled)]
    if COMPRESSION_CAPABILITY in (agent.capabilities or []):
        chosen.append(build_search_history_tool(workdir))
    return chosen
