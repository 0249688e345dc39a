"""The admin's JSON views for the agent form (mounted under /admin/agents/ by ``config.urls``): the
budget figures of the agent as typed, and the models an endpoint lists. Staff who may open an agent
form only; an endpoint's key is used by ``runtime.models.endpoint_models`` and never leaves the server.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from agent_platform.admin_base import admin_json
from agent_platform.budget import agent_as_typed, agent_budget_figures, budget_figures_html
from agent_platform.errors import ApplicationError, NotFound
from agent_platform.models import Agent, ModelEndpoint
from agent_platform.numbers import whole_number
from agent_platform.runtime.models import EndpointModelsUnavailable, endpoint_models

AGENT_FORM_PERMISSIONS = (
    "agent_platform.add_agent",
    "agent_platform.change_agent",
    "agent_platform.view_agent",
)
MODEL_LIST_PERMISSIONS = (
    "agent_platform.add_agent",
    "agent_platform.change_agent",
    "agent_platform.manage_model_endpoints",
)


def _row_id(raw: str | None, *, what: str) -> int:
    row_id = whole_number(raw)
    if row_id is None:
        raise ApplicationError(_("Name the %(what)s by its id.") % {"what": what}, code="invalid_value")
    return row_id


def agent_or_none(request: HttpRequest) -> Agent | None:
    """The saved agent named by ``?agent=`` (absent or empty: a new one)."""
    if not request.GET.get("agent"):
        return None
    agent = Agent.objects.select_related("endpoint").filter(
        pk=_row_id(request.GET["agent"], what=Agent._meta.verbose_name)
    )
    if (found := agent.first()) is None:
        raise NotFound(_("No such agent."))
    return found


@admin_json(permissions=AGENT_FORM_PERMISSIONS)
def agent_figures(request: HttpRequest) -> JsonResponse:
    figures = agent_budget_figures(agent_as_typed(base=agent_or_none(request), values=request.GET))
    return JsonResponse({"figures": figures.as_dict(), "html": budget_figures_html(figures)})


@admin_json(permissions=MODEL_LIST_PERMISSIONS)
def endpoint_model_list(request: HttpRequest) -> JsonResponse:
    endpoint = ModelEndpoint.objects.filter(
        pk=_row_id(request.GET.get("endpoint"), what=ModelEndpoint._meta.verbose_name)
    ).first()
    if endpoint is None:
        raise NotFound(_("No such model endpoint."))
    try:
        models = endpoint_models(endpoint, refresh=request.GET.get("refresh") == "1")
    except EndpointModelsUnavailable as exc:
        message = _(
            "%(endpoint)s could not list its models: %(reason)s Model names are not checked against it."
        )
        raise EndpointModelsUnavailable(
            message % {"endpoint": endpoint.name, "reason": exc.message}, default_model=endpoint.default_model
        ) from exc
    message = ngettext(
        "%(endpoint)s lists %(count)d model.", "%(endpoint)s lists %(count)d models.", len(models)
    ) % {"endpoint": endpoint.name, "count": len(models)}
    return JsonResponse(
        {
            "endpoint": endpoint.name,
            "default_model": endpoint.default_model,
            "models": models,
            "message": message,
        }
    )


urlpatterns = [
    path("figures", agent_figures, name="agent-figures"),
    path("endpoint-models", endpoint_model_list, name="agent-endpoint-models"),
]
