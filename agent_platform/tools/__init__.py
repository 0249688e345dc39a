"""The tools the platform ships (SPEC §2.2), built per run for one agent and one thread.

``task`` is not built here: it needs graph assembly, so the runtime adds it.
"""

from __future__ import annotations

from langchain_core.tools import BaseTool

from agent_platform.tools.ask_user import build_ask_user_tool
from agent_platform.tools.files import build_file_tools
from agent_platform.tools.history_search import build_search_history_tool
from agent_platform.tools.knowledge import build_query_kb_tool
from agent_platform.tools.web_search import WebSearchProvider, build_web_search_tool
from agent_platform.workdir import Workdir
from context_engine.config import COMPRESSION_CAPABILITY

BUILT_HERE = ("query_kb", "web_search", "ls", "read_file", "write_file", "edit_file", "ask_user")


def build_tools(
    *, agent, conversation=None, workdir: Workdir, web_search_provider: WebSearchProvider | None = None
) -> list[BaseTool]:
    """The agent's enabled tools among ``BUILT_HERE``, in the agent's order (unknown names are skipped),
    then ``search_history`` for an agent with the compression capability: what a summary folded stays
    searchable (issue 25)."""
    enabled = [name for name in (agent.tools or []) if name in BUILT_HERE]
    tools: dict[str, BaseTool] = {}
    if "query_kb" in enabled:
        tools["query_kb"] = build_query_kb_tool()
    if "web_search" in enabled:
        tools["web_search"] = build_web_search_tool(web_search_provider)
    if "ask_user" in enabled:
        tools["ask_user"] = build_ask_user_tool()
    file_tools = build_file_tools(workdir)
    tools.update({name: file_tools[name] for name in enabled if name in file_tools})
    chosen = [tools[name] for name in dict.fromkeys(enabled)]
    if COMPRESSION_CAPABILITY in (agent.capabilities or []):
        chosen.append(build_search_history_tool(workdir))
    return chosen
