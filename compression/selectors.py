"""Reads for compression: bulk candidates (from the indexed pressure figures, never checkpoints) and records."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Exists, F, OuterRef, QuerySet
from django.utils import timezone

from conversations.models import AgentRun, Conversation


def compaction_candidates(
    *,
    agent_slug: str | None = None,
    min_pressure: float | None = None,
    idle_for: timedelta | None = None,
    owner: str | None = None,
    limit: int | None = None,
) -> QuerySet[Conversation]:
    """Active threads matching the filters, highest pressure first, annotated with ``has_active_run``.

    Reads only the ``Conversation`` columns the runs and compressions keep up to date, so selecting
    among many threads never opens a checkpoint.
    """
    active_runs = AgentRun.objects.filter(conversation=OuterRef("pk"), status__in=AgentRun.ACTIVE_STATUSES)
    queryset = (
        Conversation.objects.filter(status=Conversation.Status.ACTIVE)
        .select_related("agent", "owner")
        .annotate(has_active_run=Exists(active_runs))
    )
    if agent_slug:
        queryset = queryset.filter(agent__slug=agent_slug)
    if owner:
        queryset = queryset.filter(owner__username=owner)
    if min_pressure is not None:
        queryset = queryset.filter(pressure_ratio__gte=min_pressure)
    if idle_for is not None:
        queryset = queryset.filter(last_activity_at__lte=timezone.now() - idle_for)
    queryset = queryset.order_by(F("pressure_ratio").desc(nulls_last=True), "last_activity_at", "pk")
    return queryset[:limit] if limit else queryset
