"""Staff page for tuning thresholds: active threads by context pressure, with a histogram per agent.

It lists the threads the staff user may see (``conversations.access``): every thread with
``conversations.view_conversation``, else only their own. The figures are the per-thread copies of
``token_usage`` on ``Conversation`` (no checkpoint is opened).
Mounted under /admin/pressure/ by ``agent_platform.urls``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.core.validators import slug_re
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from agent_platform.models import Agent
from conversations.access import threads_visible_to
from conversations.models import Conversation
from conversations.pages import HINT_RATIO

BIN_WIDTH = 0.1
BIN_COUNT = 11  # [0, 0.1) … [0.9, 1.0), then everything at or above the trigger
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


def pressure_bin(ratio: float) -> int:
    """The histogram bin of a pressure ratio; 1.0 and above share the last bin."""
    if ratio < 0:
        return 0
    return min(BIN_COUNT - 1, int(round(ratio, 4) / BIN_WIDTH + 1e-9))


def pressure_histograms(threads: list[Conversation]) -> list[Histogram]:
    by_agent: dict[int, Histogram] = {}
    for thread in threads:
        if thread.pressure_ratio is None:
            continue
        histogram = by_agent.setdefault(thread.agent_id, Histogram(agent=thread.agent))
        histogram.counts[pressure_bin(thread.pressure_ratio)] += 1
    return sorted(by_agent.values(), key=lambda h: h.agent.name)


@staff_member_required
@require_GET
def pressure_overview(request: HttpRequest) -> HttpResponse:
    threads = threads_visible_to(request.user).select_related("agent", "owner")
    agent_slug = request.GET.get("agent", "")
    if agent_slug:
        # Not a slug (e.g. a NUL byte, which PostgreSQL rejects in a query): no agent has it.
        slug_ok = slug_re.fullmatch(agent_slug) is not None
        threads = threads.filter(agent__slug=agent_slug) if slug_ok else threads.none()
    measured = list(
        threads.filter(pressure_ratio__isnull=False).order_by("-pressure_ratio", "-last_activity_at")
    )
    context = {
        **admin.site.each_context(request),
        "title": _("Context pressure"),
        "histograms": pressure_histograms(measured),
        "threads": measured[:THREAD_ROWS],
        "thread_count": len(measured),
        "unmeasured_count": threads.filter(pressure_ratio__isnull=True).count(),
        "agents": Agent.objects.order_by("name"),
        "agent_slug": agent_slug,
        "hint_ratio": HINT_RATIO,
        "chart_width": CHART_WIDTH,
        "chart_height": CHART_HEIGHT,
    }
    return render(request, "admin/conversations/pressure.html", context)


urlpatterns = [path("", pressure_overview, name="admin-pressure")]
