"""Staff page for tuning thresholds: active threads by context pressure, with a histogram per agent.

It lists the threads the staff user may see (``conversations.access``): every thread with
``conversations.view_conversation``, else only their own. The figures are the per-thread copies of
``token_usage`` on ``Conversation`` (no checkpoint is opened), binned by the database
(``selectors.thread_pressure_overview``).
Mounted under /admin/pressure/ by ``config.urls``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from agent_platform.models import Agent
from context_engine.policy.pressure import HINT_RATIO
from conversations.selectors import PRESSURE_BIN_COUNT, PRESSURE_BIN_WIDTH, thread_pressure_overview

BIN_WIDTH, BIN_COUNT = PRESSURE_BIN_WIDTH, PRESSURE_BIN_COUNT
CHART_WIDTH = 330
CHART_HEIGHT = 120
THREAD_ROWS = 200


@dataclass(frozen=True)
class Bar:
    label: str
    count: int
    x: float
    y: float
    width: float
    height: float
    over: bool


@dataclass
class Histogram:
    agent: Agent
    counts: list[int] = field(default_factory=lambda: [0] * BIN_COUNT)

    @property
    def total(self) -> int:
        return sum(self.counts)

    def bars(self) -> list[Bar]:
        tallest = max(self.counts) or 1
        slot = CHART_WIDTH / BIN_COUNT
        bars = []
        for index, count in enumerate(self.counts):
            height = round(CHART_HEIGHT * count / tallest, 1)
            label = f"≥{index / 10:.1f}" if index == BIN_COUNT - 1 else f"{index / 10:.1f}"
            bars.append(
                Bar(
                    label=label,
                    count=count,
                    x=round(index * slot + 1, 1),
                    y=round(CHART_HEIGHT - height, 1),
                    width=round(slot - 2, 1),
                    height=height,
                    over=index == BIN_COUNT - 1,
                )
            )
        return bars

    @property
    def hint_x(self) -> float:
        return round(CHART_WIDTH * HINT_RATIO / (BIN_WIDTH * BIN_COUNT), 1)


@staff_member_required
@require_GET
def pressure_overview(request: HttpRequest) -> HttpResponse:
    agent_slug = request.GET.get("agent", "")
    overview = thread_pressure_overview(user=request.user, agent_slug=agent_slug, rows=THREAD_ROWS)
    context = {
        **admin.site.each_context(request),
        "title": _("Context pressure"),
        "histograms": [Histogram(agent=agent, counts=counts) for agent, counts in overview.histograms],
        "threads": overview.threads,
        "thread_count": overview.thread_count,
        "unmeasured_count": overview.unmeasured_count,
        "agents": overview.agents,
        "agent_slug": agent_slug,
        "hint_ratio": HINT_RATIO,
        "chart_width": CHART_WIDTH,
        "chart_height": CHART_HEIGHT,
    }
    return render(request, "admin/conversations/pressure.html", context)


urlpatterns = [path("", pressure_overview, name="admin-pressure")]
