"""``{% share_panel %}``: the owner's "Share" panel on the thread page (users shared with, the link)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from conversations.models import ThreadLink, ThreadShare

register = template.Library()


@register.inclusion_tag("conversations/_share_panel.html", takes_context=True)
def share_panel(context: template.Context) -> dict[str, Any]:
    conversation = context["conversation"]
    link = ThreadLink.objects.filter(conversation=conversation).first()
    request = context["request"]
    return {
        "conversation": conversation,
        "csrf_token": context.get("csrf_token"),
        "shares": ThreadShare.objects.filter(conversation=conversation)
        .select_related("user")
        .order_by("created_at"),
        "link": link,
        "link_url": request.build_absolute_uri(reverse("conversations:thread-link-read", args=[link.token]))
        if link
        else "",
    }
