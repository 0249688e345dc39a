"""The thread page's list-side parts as template tags: the sidebar of the reader's own threads, the
agent's introduction (description and starter prompts) on an empty thread, and the export links."""

from __future__ import annotations

from typing import Any

from django import template

from agent_platform.selectors import agent_starters
from conversations.search import threads_in_scope

register = template.Library()
SIDEBAR_MAX = 30


@register.inclusion_tag("conversations/_thread_sidebar.html", takes_context=True)
def thread_sidebar(context: template.Context) -> dict[str, Any]:
    """The reader's own newest threads (the current one marked when it is theirs)."""
    request, conversation = context["request"], context["conversation"]
    threads = list(threads_in_scope(user=request.user)[:SIDEBAR_MAX])
    return {"threads": threads, "current_id": conversation.pk}


@register.inclusion_tag("conversations/_agent_intro.html", takes_context=True)
def agent_intro(context: template.Context) -> dict[str, Any]:
    """What the agent is for and, for the owner, the starter prompts: shown while the thread is empty."""
    conversation = context["conversation"]
    return {
        "agent": conversation.agent,
        "starters": agent_starters(conversation.agent) if context.get("can_act") else [],
        "empty": not context.get("messages_list"),
    }
