"""Reads of platform configuration."""

from __future__ import annotations

from django.db.models import QuerySet

from agent_platform.models import Agent


def agent_list_enabled() -> QuerySet[Agent]:
    return Agent.objects.filter(is_enabled=True).order_by("name")


MAX_STARTERS, MAX_STARTER_CHARS = 4, 300


def agent_starters(agent: Agent) -> list[str]:
    """The starter prompts an empty thread offers: the non-empty lines, at most ``MAX_STARTERS``."""
    lines = (line.strip()[:MAX_STARTER_CHARS] for line in (agent.starter_prompts or "").splitlines())
    return [line for line in lines if line][:MAX_STARTERS]
