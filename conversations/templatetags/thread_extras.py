"""Template filters of the chat pages: token counts, receipts, collapsing, Markdown, tool-call arguments."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from context_engine.compaction.media import SavedMedia, media_of
from context_engine.compaction.receipts import Receipt
from context_engine.tokens.messages import format_tokens
from conversations import pages
from conversations.markdown import markdown_to_html
from conversations.models import Message

register = template.Library()


@register.filter
def tokens(value: Any) -> str:
    return format_tokens(value)


@register.filter
def receipt(content: Any) -> Receipt | None:
    return pages.receipt_parse(content)


@register.filter
def saved_result(message: Message, saved_paths: frozenset[str] | None) -> pages.SavedResult | None:
    """``{% with saved=message|saved_result:saved_paths %}``: the saved copy of a tool result."""
    return pages.saved_result(
        content=getattr(message, "content", None),
        tool_name=getattr(message, "tool_name", "") or "",
        saved_paths=saved_paths or frozenset(),
    )


@register.filter
def saved_media(message: Message, saved_paths: frozenset[str] | None) -> list[SavedMedia]:
    """``message|saved_media:saved_paths``: the inline media of a message that compaction saved."""
    if not saved_paths:
        return []
    return [media for media in media_of(getattr(message, "content", "") or "") if media.path in saved_paths]


@register.filter
def is_long(text: Any) -> bool:
    return pages.is_long(text)


@register.filter
def is_long_message(text: Any) -> bool:
    return pages.is_long_message(text)


@register.filter
def markdown(text: Any) -> SafeString:
    """Markdown rendered to HTML that the sanitizer let through (safe by construction)."""
    return mark_safe(markdown_to_html(text if isinstance(text, str) else ""))  # noqa: S308


@register.filter
def first_line(text: Any) -> str:
    return pages.first_line(text)


@register.filter
def pretty_json(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


@register.filter
def percent(ratio: Any) -> str:
    """``0.8512`` → ``85.1%``."""
    try:
        return f"{float(ratio) * 100:.1f}%"
    except (TypeError, ValueError):
        return "–"
