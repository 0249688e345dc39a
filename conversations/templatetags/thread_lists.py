"""The thread page's list-side parts as template tags: the sidebar of the reader's own threads, the
agent's introduction (description and starter prompts) on an empty thread, and the export links."""

from __future__ import annotations

from datetime import date
from typing import Any

from django import template
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from agent_platform.selectors import agent_starters
from conversations.models import Conversation
from conversations.search import threads_in_scope

register = template.Library()
SIDEBAR_MAX = 30


@register.inclusion_tag("conversations/_thread_sidebar.html", takes_context=True)
def thread_sidebar(context: template.Context) -> dict[str, Any]:
    """The reader's own newest threads (the current one marked when it is theirs); someone reading
    another's thread (shared with them) sees that thread on top instead of "No threads yet."."""
    request, conversation = context["request"], context["conversation"]
    threads = list(
        threads_in_scope(user=request.user).order_by(
            F("pinned_at").desc(nulls_last=True), "-last_activity_at"
        )[:SIDEBAR_MAX]
    )
    own = conversation.owner_id == request.user.pk
    return {
        "groups": sidebar_groups(threads, today=timezone.localdate()),
        "current_id": conversation.pk,
        "reading": None if own else conversation,
        "archived": conversation if own and conversation.archived_at else None,
        "next": request.get_full_path(),
    }


def sidebar_groups(threads: list[Conversation], *, today: date) -> list[tuple[str, list[Conversation]]]:
    """``threads`` (pinned first, then newest activity) under their headings: Pinned, Today, Yesterday,
    Last 7 days, Older (in the user's time zone); headings with no thread are left out."""
    names = {
        "pinned": _("Pinned"),
        "today": _("Today"),
        "yesterday": _("Yesterday"),
        "week": _("Last 7 days"),
        "older": _("Older"),
    }
    grouped: dict[str, list[Conversation]] = {key: [] for key in names}
    for thread in threads:
        grouped[_day_group(thread, today=today)].append(thread)
    return [(names[key], items) for key, items in grouped.items() if items]


def _day_group(thread: Conversation, *, today: date) -> str:
    if thread.pinned_at is not None:
        return "pinned"
    days = (today - timezone.localdate(thread.last_activity_at)).days
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    return "week" if days < 7 else "older"


@register.inclusion_tag("conversations/_agent_intro.html", takes_context=True)
def agent_intro(context: template.Context) -> dict[str, Any]:
    """What the agent is for and, for the owner, the starter prompts: shown while the thread is empty."""
    conversation = context["conversation"]
    return {
        "agent": conversation.agent,
        "starters": agent_starters(conversation.agent) if context.get("can_act") else [],
        "empty": not context.get("messages_list"),
    }
