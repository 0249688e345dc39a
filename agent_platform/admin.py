"""Admin control room for model endpoints, agents and API tokens.

Compression fields are editable only with ``agent_platform.tune_compression``; other staff see them
read-only. Endpoints (a URL and the name of its key's variable) are created, changed and deleted only
with ``agent_platform.manage_model_endpoints``; which variable may go to which origin is the operator's
``MODEL_KEY_BINDINGS``, shown on every endpoint page. A token's owner is fixed when it is issued.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from agent_platform import axes_admin  # noqa: F401  (registers axes' login-attempt admin)
from agent_platform.admin_forms import GENERAL_FIELDS, MODEL_FIELDS, TOOL_FIELDS, AgentAdminForm
from agent_platform.budget import agent_budget_figures, budget_figures_html
from agent_platform.calibration.selectors import calibration_for
from agent_platform.key_bindings import binding_error, key_bindings
from agent_platform.knowledge import admin as knowledge_admin  # noqa: F401  (registers KB admin)
from agent_platform.models import COMPRESSION_FIELDS, Agent, ApiToken, ModelEndpoint
from agent_platform.services import api_token_revoke
from agent_platform.tools import tools_unavailable
from context_engine.config import trigger_capped

TUNE_COMPRESSION_PERMISSION = "agent_platform.tune_compression"
MANAGE_ENDPOINTS_PERMISSION = "agent_platform.manage_model_endpoints"
BUDGET_FIELDS = ("summary_threshold", "budget_figures")  # the figures beside the threshold, on its row
THRESHOLD_FIELDSET_CLASS = "agent-threshold"  # the fieldset the retune panel follows


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = AgentAdminForm
    list_display = (
        "name",
        "slug",
        "endpoint",
        "model_name",
        "summary_threshold",
        "trigger_display",
        "is_enabled",
    )
    list_filter = ("endpoint", "is_enabled")
    list_select_related = ("endpoint",)
    search_fields = ("name", "slug", "model_name")
    prepopulated_fields = {"slug": ("name",)}

    class Media:
        js = ("js/admin-agent.js",)

    def get_fieldsets(self, request: HttpRequest, obj: Agent | None = None):
        tools = (*TOOL_FIELDS, "tool_warnings") if self._tool_problems(obj) else TOOL_FIELDS
        # The threshold and its figures stand alone, so the change form can put "what this threshold
        # would do" right under them (``change_form.html``), above the other compression fields.
        details = COMPRESSION_FIELDS[1:]
        # No calibration figure on an agent that does not exist yet.
        if obj is not None:
            details += ("calibration_display",)
        return (
            (None, {"fields": GENERAL_FIELDS}),
            (_("Model"), {"fields": MODEL_FIELDS}),
            (_("Tools and capabilities"), {"fields": tools}),
            (
                _("Context compression"),
                {
                    "description": _(
                        "One budget: above the effective trigger, large tool results are saved to files "
                        "first; only if that is not enough, older history is summarized."
                    ),
                    "fields": (BUDGET_FIELDS,),
                    "classes": (THRESHOLD_FIELDSET_CLASS,),
                },
            ),
            (None, {"fields": details, "classes": ("compression-details",)}),
        )

    @admin.display(description=_("Effective trigger (tokens)"))
    def trigger_display(self, obj: Agent) -> str:
        if obj.pk is None and not obj.summary_threshold:
            return "-"
        window = obj.resolved_context_window
        capped = trigger_capped(summary_threshold_k=obj.summary_threshold, context_window=window)
        note = _(" (capped at 90%% of the %(window)s-token window)") % {"window": window} if capped else ""
        return f"{obj.effective_trigger:,}{note}"

    @admin.display(description=_("Figures in force"))
    def budget_figures(self, obj: Agent) -> str:
        """The window (and its source), T, the hint line and the pinned cap, recomputed as the admin
        types by ``static/js/admin-agent.js`` through ``admin_views.agent_figures``."""
        return format_html(
            '<div id="agent-budget" class="agent-budget" data-url="{}" data-agent="{}" aria-live="polite">{}</div>',
            reverse("agent-figures"),
            obj.pk or "",
            mark_safe(budget_figures_html(agent_budget_figures(obj))),  # noqa: S308 - a rendered template
        )

    @admin.display(description=_("Tools that cannot work here"))
    def tool_warnings(self, obj: Agent | None) -> str:
        problems = self._tool_problems(obj)
        return format_html(
            '<ul class="tool-warnings">{}</ul><p class="help">{}</p>',
            format_html_join("", "<li>{}</li>", ((text,) for text in problems.values())),
            _("They are left out of the agent's tools at run time until this is fixed."),
        )

    @staticmethod
    def _tool_problems(obj: Agent | None) -> dict[str, str]:
        names = obj.tools if obj is not None else Agent._meta.get_field("tools").get_default()
        return tools_unavailable(names or [])

    @admin.display(description=_("Estimate calibration"))
    def calibration_display(self, obj: Agent) -> str:
        profile = obj.compression_config().profile.name
        calibration = calibration_for(agent=obj)
        if not calibration.observations:
            return _("×1.000: no reported usage yet (profile %(profile)s)") % {"profile": profile}
        return _("×%(factor).3f from %(count)s reported requests (profile %(profile)s)") % {
            "factor": calibration.factor,
            "count": f"{calibration.observations:,}",
            "profile": profile,
        }

    def get_readonly_fields(self, request: HttpRequest, obj: Agent | None = None) -> tuple[str, ...]:
        readonly = ("trigger_display", "budget_figures", "tool_warnings", "calibration_display")
        if not request.user.has_perm(TUNE_COMPRESSION_PERMISSION):
            readonly += COMPRESSION_FIELDS
        return readonly

    def save_model(self, request: HttpRequest, obj: Agent, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        for problem in self._tool_problems(obj).values():
            message = _("%(problem)s It is left out of the agent's tools.") % {"problem": problem}
            self.message_user(request, message, messages.WARNING)


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "base_url",
        "api_key_env",
        "key_bound",
        "default_model",
        "supports_vision",
        "agent_count",
    )
    search_fields = ("name", "base_url", "default_model")
    readonly_fields = ("key_bindings_in_force", "agents_using")
    fields = (
        "name",
        "base_url",
        "api_key_env",
        "key_bindings_in_force",
        "default_model",
        "context_window",
        "supports_vision",
        "input_price_per_million",
        "output_price_per_million",
        "cached_input_price_per_million",
        "cache_write_price_per_million",
        "agents_using",
    )

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).annotate(agent_total=Count("agents"))

    @admin.display(description=_("Agents"), ordering="agent_total")
    def agent_count(self, obj: ModelEndpoint) -> int:
        return obj.agent_total

    @admin.display(description=_("Key bound"), boolean=True)
    def key_bound(self, obj: ModelEndpoint) -> bool | None:
        """None (no key to bind) for a keyless endpoint; False: its key is not sent (runs fail)."""
        if not obj.api_key_env:
            return None
        return binding_error(key_env=obj.api_key_env, url=obj.base_url) is None

    @admin.display(description=_("Key bindings (MODEL_KEY_BINDINGS)"))
    def key_bindings_in_force(self, obj: ModelEndpoint | None = None) -> str:
        bindings = key_bindings()
        if not bindings:
            return _("None: no endpoint is sent a key. The operator sets MODEL_KEY_BINDINGS.")
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li><code>{}</code> → {}</li>",
                (
                    (name, ", ".join(sorted(str(origin) for origin in origins)))
                    for name, origins in sorted(bindings.items())
                ),
            ),
        )

    @admin.display(description=_("Agents using this endpoint"))
    def agents_using(self, obj: ModelEndpoint) -> str:
        agents = obj.agents.order_by("name") if obj.pk else Agent.objects.none()
        if not agents:
            return "-"
        return format_html_join(
            ", ",
            '<a href="{}">{}</a>',
            ((reverse("admin:agent_platform_agent_change", args=[a.pk]), a.name) for a in agents),
        )

    # The one permission guards every write: the model has no add/change/delete permissions at all.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(MANAGE_ENDPOINTS_PERMISSION)

    def has_change_permission(self, request: HttpRequest, obj: ModelEndpoint | None = None) -> bool:
        return request.user.has_perm(MANAGE_ENDPOINTS_PERMISSION)

    def has_delete_permission(self, request: HttpRequest, obj: ModelEndpoint | None = None) -> bool:
        return request.user.has_perm(MANAGE_ENDPOINTS_PERMISSION)

    def has_view_permission(self, request: HttpRequest, obj: ModelEndpoint | None = None) -> bool:
        return super().has_view_permission(request, obj) or self.has_change_permission(request, obj)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("key_prefix", "user", "name", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("user__username", "name", "key_prefix")
    # The owner is fixed at issue (a staff user who may change tokens must not take over another's):
    # the admin names tokens and revokes them, nothing else.
    readonly_fields = ("user", "key_prefix", "created_at", "last_used_at", "revoked_at")
    fields = ("user", "name", "key_prefix", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    @admin.action(description=_("Revoke selected tokens"), permissions=["change"])
    def revoke(self, request: HttpRequest, queryset) -> None:
        count = api_token_revoke(tokens=queryset)
        self.message_user(request, _("%(count)d token(s) revoked.") % {"count": count})

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Raw tokens are shown once, by `manage.py create_api_token`; the admin only revokes.
        return False
