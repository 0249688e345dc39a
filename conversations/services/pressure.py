"""What the thread row and the shared cache know of a thread's context: the pressure figures copied
from ``token_usage`` (so selecting among many threads never opens a checkpoint), and the
"compression under way" marker (so pages know after a reload or in a second tab)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.cache import cache
from django.utils import timezone

from conversations.models import Conversation
from conversations.selectors import COMPRESSING_KEY

# The marker expires by itself should the process die mid-compression.
COMPRESSING_TTL_SECONDS = 600


def conversation_pressure_update(*, conversation_id: int, token_usage: Mapping[str, Any] | None) -> None:
    """Copy the latest pressure figures onto the thread. Written by runs (after each run) and by every
    compression."""
    if not token_usage:
        return
    Conversation.objects.filter(pk=conversation_id).update(
        context_tokens=token_usage.get("next_llm_input_tokens"),
        trigger_tokens=token_usage.get("summary_trigger_tokens"),
        pressure_ratio=token_usage.get("summary_pressure_ratio"),
        summary_active=bool(token_usage.get("summary_active")),
        usage_updated_at=timezone.now(),
    )


def thread_compressing_mark(*, thread_id: object, trigger: str) -> None:
    cache.set(COMPRESSING_KEY.format(thread_id=thread_id), trigger, COMPRESSING_TTL_SECONDS)


def thread_compressing_clear(*, thread_id: object) -> None:
    cache.delete(COMPRESSING_KEY.format(thread_id=thread_id))
