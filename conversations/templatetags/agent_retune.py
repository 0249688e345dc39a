"""``{% agent_retune agent %}``: the agent change form's "what this threshold would do" panel (the
admin template of a lower app loads this higher app's tag, as the thread page loads
``compression_panels``)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from agent_platform.models import Agent
from conversations.admin_retune import retune_panel

register = template.Library()


@register.simple_tag
def agent_retune(agent: Agent) -> SafeString:
    panel = retune_panel(agent=agent)
    return format_html(
        '<div id="agent-retune" class="agent-retune" data-url="{}" aria-live="polite">{}</div>',
        panel["url"],
        mark_safe(panel["html"]),  # noqa: S308 - a rendered template
    )
