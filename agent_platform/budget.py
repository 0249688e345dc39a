"""The figures beside an agent's budget (admin): the resolved context window and where it came from,
the effective trigger, the hint line and the pinned-token cap in force, on the agent as saved or as
typed. Computed by what the runtime uses (``Agent.compression_config``, ``Agent.context_window_source``,
``context_engine.policy.pressure.hint_tokens``), never re-derived here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from django.template.loader import render_to_string
from django.utils.translation import gettext as _

from agent_platform.errors import ApplicationError
from agent_platform.models import Agent, ModelEndpoint
from agent_platform.numbers import whole_number
from context_engine.config import TOKENS_PER_K, trigger_capped
from context_engine.policy.pressure import HINT_RATIO, hint_tokens

# The fields a typed value may stand in for (the ones the figures depend on).
TYPED_NUMBERS = ("context_window", "summary_threshold", "summary_pinned_token_limit")
TYPED_FIELDS = ("endpoint", "model_name", *TYPED_NUMBERS)
MAX_TYPED_NUMBER = 2**31 - 1  # a PositiveIntegerField's ceiling
FIGURES_TEMPLATE = "admin/agent_platform/agent/_budget_figures.html"


class TypedValueError(ApplicationError):
    status = 400
    code = "invalid_value"


@dataclass(frozen=True)
class BudgetFigures:
    model_name: str
    endpoint_name: str  # "" for the offline model
    window: int | None
    window_source: str  # agent_platform.models.WINDOW_FROM_*
    threshold_tokens: int  # the admin's number × 1024, before the window's cap
    trigger: int  # T, as the runtime computes it
    hint: int  # where the page's hint starts, in tokens
    pinned_limit: int  # the agent's field
    pinned_cap: int  # the cap in force: the field, never above a quarter of T
    trigger_capped: bool  # the window's cap lowered T below the admin's number (``config.trigger_capped``)

    @property
    def pinned_capped(self) -> bool:
        return self.pinned_cap < self.pinned_limit

    def as_dict(self) -> dict:
        return {
            **asdict(self),
            "pinned_capped": self.pinned_capped,
            "hint_ratio": HINT_RATIO,
        }


def agent_budget_figures(agent: Agent) -> BudgetFigures:
    config = agent.compression_config()
    window, source = agent.context_window_source
    return BudgetFigures(
        model_name=agent.resolved_model_name,
        endpoint_name=agent.endpoint.name if agent.endpoint is not None else "",
        window=window,
        window_source=source,
        threshold_tokens=agent.summary_threshold * TOKENS_PER_K,
        trigger=config.trigger_tokens,
        hint=hint_tokens(config.trigger_tokens),
        pinned_limit=agent.summary_pinned_token_limit,
        pinned_cap=config.pinned_cap,
        trigger_capped=trigger_capped(summary_threshold_k=agent.summary_threshold, context_window=window),
    )


def agent_as_typed(*, base: Agent | None, values: Mapping[str, str]) -> Agent:
    """A copy of ``base`` (a new agent when None) carrying the typed values of ``TYPED_FIELDS`` that are
    present in ``values``; never saved. Raises ``TypedValueError`` for a value the form would refuse."""
    agent = (
        Agent(**{f.attname: getattr(base, f.attname) for f in Agent._meta.concrete_fields})
        if base
        else Agent()
    )
    if base is not None:
        agent.endpoint = base.endpoint
    for name in TYPED_NUMBERS:
        if name not in values:
            continue
        raw = (values.get(name) or "").strip()
        if not raw and name == "context_window":
            agent.context_window = None
            continue
        number = whole_number(raw, maximum=MAX_TYPED_NUMBER)
        if number is None:
            label = Agent._meta.get_field(name).verbose_name
            raise TypedValueError(_("%(field)s: enter a whole number.") % {"field": label})
        setattr(agent, name, number)
    if not agent.summary_threshold:
        raise TypedValueError(_("The threshold must be greater than 0."))
    if "endpoint" in values:
        agent.endpoint = _endpoint(values.get("endpoint") or "")
    if "model_name" in values:
        agent.model_name = (values.get("model_name") or "").strip()[:200]
    return agent


def _endpoint(raw: str) -> ModelEndpoint | None:
    raw = raw.strip()
    if not raw:
        return None
    endpoint_id = whole_number(raw)
    endpoint = ModelEndpoint.objects.filter(pk=endpoint_id).first() if endpoint_id is not None else None
    if endpoint is None:
        raise TypedValueError(_("No such model endpoint."), code="not_found", status=404)
    return endpoint


def budget_figures_html(figures: BudgetFigures) -> str:
    """The figures as the form shows them (the page's first render and every live update)."""
    counts = {
        name: f"{value:,}"
        for name in ("window", "threshold_tokens", "trigger", "hint", "pinned_limit", "pinned_cap")
        if isinstance(value := getattr(figures, name), int)
    }
    return render_to_string(
        FIGURES_TEMPLATE, {"figures": figures, "n": counts, "hint_percent": f"{HINT_RATIO:.0%}"}
    )
