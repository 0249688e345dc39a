"""Reads of platform configuration."""

from __future__ import annotations

from django.db.models import QuerySet

from agent_platform.models import Agent


def agent_list_enabled() -> QuerySet[Agent]:
    return Agent.objects.filter(is_enabled=True).order_by("name")
