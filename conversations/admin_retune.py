"""The agent form's "what this threshold would do" (mounted under /admin/agents/ by ``config.urls``):
how many of the agent's threads sit under the hint, between the hint and the trigger, and over it,
today and with the typed threshold, from the thread rows' stored figures (``selectors
.agent_retune_counts``: one aggregate query, no checkpoint). The change form renders it through the
``agent_retune`` template tag and ``static/js/admin-agent.js`` refreshes it as the admin types."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.utils.translation import gettext as _

from agent_platform.admin_base import admin_json
from agent_platform.admin_views import AGENT_FORM_PERMISSIONS
from agent_platform.budget import BudgetFigures, agent_as_typed, agent_budget_figures
from agent_platform.errors import NotFound
from agent_platform.models import Agent
from conversations.selectors import RETUNE_BANDS, RetuneCounts, agent_retune_counts

RETUNE_TEMPLATE = "admin/agent_platform/agent/_retune.html"
BAR_WIDTH = 120  # px of the longest bar


def _cap_note(figures: BudgetFigures) -> str:
    """Why T is below the threshold × 1,024, when the window's cap lowered it; else ``""``."""
    if not figures.trigger_capped:
        return ""
    return _("capped at 90%% of the %(window)s-token window; the threshold asks for %(asked)s") % {
        "window": f"{figures.window:,}",
        "asked": f"{figures.threshold_tokens:,}",
    }


def retune_html(*, agent: Agent, typed: BudgetFigures, counts: RetuneCounts) -> str:
    today = agent_budget_figures(agent)
    labels = {
        "under_hint": _("under the hint"),
        "hint_to_trigger": _("between the hint and the trigger"),
        "over_trigger": _("at or over the trigger"),
    }
    tallest = max([*counts.today.values(), *counts.typed.values(), 1])
    rows = [
        {
            "band": band,
            "label": labels[band],
            "today": counts.today[band],
            "typed": counts.typed[band],
            "today_width": round(BAR_WIDTH * counts.today[band] / tallest),
            "typed_width": round(BAR_WIDTH * counts.typed[band] / tallest),
        }
        for band in RETUNE_BANDS
    ]
    return render_to_string(
        RETUNE_TEMPLATE,
        {
            "rows": rows,
            "counts": counts,
            "trigger_today": f"{today.trigger:,}",
            "trigger_typed": f"{typed.trigger:,}",
            "capped_today": _cap_note(today),
            "capped_typed": _cap_note(typed),
            "changed": typed.trigger != today.trigger,
            "bar_width": BAR_WIDTH,
        },
    )


def retune_panel(*, agent: Agent) -> dict[str, object]:
    """Today's counts, for the change form's first render (the typed value is the saved one)."""
    figures = agent_budget_figures(agent)
    trigger = figures.trigger
    counts = agent_retune_counts(agent_id=agent.pk, trigger_today=trigger, trigger_typed=trigger)
    return {
        "url": reverse("agent-retune", args=[agent.pk]),
        "html": retune_html(agent=agent, typed=figures, counts=counts),
    }


@admin_json(permissions=AGENT_FORM_PERMISSIONS)
def agent_retune(request: HttpRequest, agent_id: int) -> JsonResponse:
    agent = Agent.objects.select_related("endpoint").filter(pk=agent_id).first()
    if agent is None:
        raise NotFound(_("No such agent."))
    typed = agent_budget_figures(agent_as_typed(base=agent, values=request.GET))
    trigger_typed = typed.trigger
    counts = agent_retune_counts(
        agent_id=agent.pk, trigger_today=agent.effective_trigger, trigger_typed=trigger_typed
    )
    return JsonResponse(
        {
            "trigger_today": agent.effective_trigger,
            "trigger_typed": trigger_typed,
            "trigger_typed_capped": typed.trigger_capped,
            "today": counts.today,
            "typed": counts.typed,
            "unmeasured": counts.unmeasured,
            "html": retune_html(agent=agent, typed=typed, counts=counts),
        }
    )


urlpatterns = [path("<int:agent_id>/retune", agent_retune, name="agent-retune")]
