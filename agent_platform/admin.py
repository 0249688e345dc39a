"""Admin control room for agents and API tokens.

Compression fields are editable only with ``agent_platform.tune_compression``; other staff see them
read-only.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from agent_platform.knowledge import admin as knowledge_admin  # noqa: F401  (registers KB admin)
from agent_platform.models import CAPABILITY_CHOICES, COMPRESSION_FIELDS, TOOL_CHOICES, Agent, ApiToken
from compression.engine.budget import TOKENS_PER_K

TUNE_COMPRESSION_PERMISSION = "agent_platform.tune_compression"
# The editable fields, in their fieldsets (the form and the page list them from here).
GENERAL_FIELDS = ("name", "slug", "description", "system_prompt", "is_enabled")
MODEL_FIELDS = ("provider", "model_name", "base_url", "api_key_env", "temperature", "context_window")
TOOL_FIELDS = ("tools", "capabilities")


class AgentAdminForm(forms.ModelForm):
    tools = forms.MultipleChoiceField(
        choices=TOOL_CHOICES, required=False, widget=forms.CheckboxSelectMultiple
    )
    capabilities = forms.MultipleChoiceField(
        choices=CAPABILITY_CHOICES, required=False, widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = Agent
        fields = [*GENERAL_FIELDS, *MODEL_FIELDS, *TOOL_FIELDS, *COMPRESSION_FIELDS]


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = AgentAdminForm
    list_display = (
        "name",
        "slug",
        "provider",
        "model_name",
        "summary_threshold",
        "trigger_display",
        "is_enabled",
    )
    list_filter = ("provider", "is_enabled")
    search_fields = ("name", "slug", "model_name")
    prepopulated_fields = {"slug": ("name",)}
    fieldsets = (
        (None, {"fields": GENERAL_FIELDS}),
        (_("Model"), {"fields": MODEL_FIELDS}),
        (_("Tools and capabilities"), {"fields": TOOL_FIELDS}),
        (
            _("Context compression"),
            {
                "description": _(
                    "One budget: above the effective trigger, large tool results are saved to files first; "
                    "only if that is not enough, older history is summarized."
                ),
                "fields": (*COMPRESSION_FIELDS, "trigger_display"),
            },
        ),
    )

    @admin.display(description=_("Effective trigger (tokens)"))
    def trigger_display(self, obj: Agent) -> str:
        if obj.pk is None and not obj.summary_threshold:
            return "-"
        window = obj.resolved_context_window
        capped = obj.effective_trigger < obj.summary_threshold * TOKENS_PER_K
        note = _(" (capped at 90%% of the %(window)s-token window)") % {"window": window} if capped else ""
        return f"{obj.effective_trigger:,}{note}"

    def get_readonly_fields(self, request: HttpRequest, obj: Agent | None = None) -> tuple[str, ...]:
        readonly = ("trigger_display",)
        if not request.user.has_perm(TUNE_COMPRESSION_PERMISSION):
            readonly += COMPRESSION_FIELDS
        return readonly


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("key_prefix", "user", "name", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("user__username", "name", "key_prefix")
    readonly_fields = ("key_prefix", "created_at", "last_used_at")
    fields = ("user", "name", "key_prefix", "created_at", "last_used_at", "revoked_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Raw tokens are shown once, by `manage.py create_api_token`; the admin only revokes.
        return False
