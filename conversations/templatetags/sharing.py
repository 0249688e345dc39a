"""``{% share_panel %}``: the owner's "Share" panel on the thread page (users shared with, the link)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from conversations.share_selectors import thread_sharing_of

register = template.Library()


@register.inclusion_tag("conversations/_share_panel.html", takes_context=True)
def share_panel(context: template.Context) -> dict[str, Any]:
    conversation = context["conversation"]
    sharing = thread_sharing_of(conversation=conversation)
    link = sharing.link
    return {
        "conversation": conversation,
        "csrf_token": context.get("csrf_token"),
        "shares": sharing.shares,
        "link": link,
        "link_url": context["request"].build_absolute_uri(link_path(link.token)) if link else "",
    }


def link_path(token: str) -> str:
    return reverse("conversations:thread-link-read", args=[token])
