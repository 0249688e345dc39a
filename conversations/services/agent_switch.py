"""The thread's agent, switched by its owner (issue 39 item 6): the next turn runs with the new agent.

A thread's checkpoint lives under its ``thread_id``, not under an agent: every agent's graph has the
same state schema and the run opens the graph of ``Conversation.agent`` as it is when the run starts
(``agent_graph_for``), so switching is one column, and the new agent reads the whole history, summary
and pins included. Its budget applies at once: the thread's stored pressure is recomputed on the new
agent's trigger and window (as a retune does), open pages are told to re-read their meter, and the
next run's compression middleware is built from the new agent's configuration.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser
from django.utils.translation import gettext as _

from agent_platform.models import Agent
from context_engine.policy.pressure import pressure_now
from conversations import events
from conversations.errors import ThreadBusy
from conversations.models import Conversation
from conversations.selectors import thread_busy_flags, thread_compressing
from conversations.services.pressure import conversation_pressure_update
from conversations.services.threads import agent_usable, thread_lock


def thread_agent_switch(
    *, thread_id: uuid.UUID | str, user: AbstractBaseUser, agent_slug: str
) -> Conversation:
    """Make ``agent_slug`` the thread's agent from its next turn on. 409 ``thread_busy`` while a run is
    queued, running or waiting on the user, or a compression is under way; 404 for a thread that is not
    the caller's or an agent they may not use. Switching to the thread's own agent changes nothing."""
    agent = agent_usable(agent_slug=agent_slug)
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        thread_idle_checked(conversation)
        agent_set(conversation, agent)
        return conversation


def thread_idle_checked(conversation: Conversation) -> None:
    """``ThreadBusy`` unless no run is queued, running or interrupted and no compression is under way."""
    flags = thread_busy_flags(conversation=conversation)
    if flags["busy"] or thread_compressing(thread_id=conversation.thread_id):
        raise ThreadBusy(
            _("The thread is busy; switch its agent when the reply or compression has finished.")
        )


def agent_set(conversation: Conversation, agent: Agent) -> None:
    """Point the locked thread at ``agent`` and recompute its stored pressure on the new budget."""
    if conversation.agent_id == agent.pk:
        return
    conversation.agent = agent
    conversation.save(update_fields=["agent", "updated_at"])
    usage = conversation.token_usage
    if isinstance(usage, dict) and usage:
        figures = pressure_now(
            usage, trigger_tokens=agent.effective_trigger, context_window=agent.resolved_context_window
        )
        conversation_pressure_update(conversation_id=conversation.pk, token_usage={**usage, **figures})
    events.broadcast(conversation.thread_id, events.STATE, reason="agent_switched", agent=agent.slug)
