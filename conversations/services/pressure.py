"""What the thread row and the shared cache know of a thread's context: the pressure figures copied
from ``token_usage`` (so selecting among many threads never opens a checkpoint), and the
"compression under way" marker (so pages know after a reload or in a second tab)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from agent_platform.models import Agent
from context_engine.policy.pressure import pressure_figures
from conversations import events
from conversations.models import Conversation
from conversations.selectors import COMPRESSING_KEY

# The marker is a short lease (COMPRESSING_LEASE_SECONDS) that a thread of the compressing process
# renews every third of it: it clears within seconds of that process's death, never minutes.
_renewals: dict[str, threading.Event] = {}
_renewals_lock = threading.Lock()


def conversation_pressure_update(*, conversation_id: int, token_usage: Mapping[str, Any] | None) -> None:
    """Copy the thread's ``token_usage`` (whole, as its checkpoint holds it after this write: merge an
    update first) and its pressure figures onto the thread. Written by runs (at each reading and at
    their end) and by every compression and undo; GET state serves it from here."""
    if not token_usage:
        return
    Conversation.objects.filter(pk=conversation_id).update(
        token_usage=dict(token_usage),
        context_tokens=token_usage.get("next_llm_input_tokens"),
        trigger_tokens=token_usage.get("summary_trigger_tokens"),
        pressure_ratio=token_usage.get("summary_pressure_ratio"),
        summary_active=bool(token_usage.get("summary_active")),
        usage_updated_at=timezone.now(),
    )


def thread_compressing_mark(*, thread_id: object, trigger: str) -> None:
    """Mark the thread as compressing until ``thread_compressing_clear`` or this process's death."""
    key = COMPRESSING_KEY.format(thread_id=thread_id)
    lease = settings.COMPRESSING_LEASE_SECONDS
    cache.set(key, trigger, lease)
    stop = threading.Event()
    with _renewals_lock:
        if earlier := _renewals.pop(key, None):
            earlier.set()
        _renewals[key] = stop

    def renew() -> None:
        # touch, not set: once the marker was cleared, a late renewal must not bring it back.
        while not stop.wait(lease / 3):
            cache.touch(key, lease)

    threading.Thread(target=renew, name=f"compressing-{thread_id}", daemon=True).start()


def thread_compressing_clear(*, thread_id: object) -> None:
    key = COMPRESSING_KEY.format(thread_id=thread_id)
    with _renewals_lock:
        if stop := _renewals.pop(key, None):
            stop.set()
    cache.delete(key)


def conversation_pressure_retune(*, agent: Agent) -> int:
    """After a staff user changed an agent's budget: every thread's stored pressure recomputed on the
    new trigger (so /admin/pressure/ and bulk selection see it at once), and every open page of the
    agent told to re-read its meter. Returns how many threads were updated."""
    trigger, window = agent.effective_trigger, agent.resolved_context_window
    threads = list(
        Conversation.objects.filter(agent=agent, context_tokens__isnull=False).only("pk", "context_tokens")
    )
    for thread in threads:
        figures = pressure_figures(
            next_input_tokens=thread.context_tokens, trigger_tokens=trigger, context_window=window
        )
        thread.trigger_tokens = figures["summary_trigger_tokens"]
        thread.pressure_ratio = figures["summary_pressure_ratio"]
    Conversation.objects.bulk_update(threads, ["trigger_tokens", "pressure_ratio"], batch_size=500)
    events.broadcast_agent(agent.pk, events.STATE, reason="agent_retuned")  # on commit
    return len(threads)
