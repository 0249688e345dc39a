"""The agent's admin form: the model name follows the endpoint (its default and the models it lists,
asked from the browser through ``admin_views.endpoint_model_list``), and a name the endpoint's known
list does not contain is refused on save."""

from __future__ import annotations

from typing import Any

from django import forms
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agent_platform.model_catalog import OFFLINE_MODEL_NAME
from agent_platform.models import CAPABILITY_CHOICES, COMPRESSION_FIELDS, TOOL_CHOICES, Agent
from agent_platform.runtime.models import EndpointModelsUnavailable, endpoint_models

GENERAL_FIELDS = ("name", "slug", "description", "starter_prompts", "system_prompt", "is_enabled")
MODEL_FIELDS = ("endpoint", "model_name", "temperature", "context_window")
TOOL_FIELDS = ("tools", "capabilities")
LISTED_IN_ERROR = 12  # model names quoted in a refusal


class ModelNameInput(forms.TextInput):
    """A free-text model name with the endpoint's models as suggestions, a button that asks the
    endpoint for them, and a line that says what it answered."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"list": "model-name-options", "autocomplete": "off", **(attrs or {})})

    def render(self, name, value, attrs=None, renderer=None) -> str:
        field = super().render(name, value, attrs, renderer)
        extra = render_to_string(
            "admin/agent_platform/agent/_model_name_extra.html",
            {"models_url": reverse("agent-endpoint-models")},
        )
        return field + extra


class AgentAdminForm(forms.ModelForm):
    # A new agent starts with the model's defaults ticked (every tool, the compression capability):
    # a declared field does not inherit them, and an unticked box saves an agent without tools.
    tools = forms.MultipleChoiceField(
        choices=TOOL_CHOICES,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        initial=Agent._meta.get_field("tools").get_default,
        label=capfirst(Agent._meta.get_field("tools").verbose_name),
    )
    capabilities = forms.MultipleChoiceField(
        choices=CAPABILITY_CHOICES,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        initial=Agent._meta.get_field("capabilities").get_default,
        label=capfirst(Agent._meta.get_field("capabilities").verbose_name),
    )

    class Meta:
        model = Agent
        fields = [*GENERAL_FIELDS, *MODEL_FIELDS, *TOOL_FIELDS, *COMPRESSION_FIELDS]
        widgets = {"model_name": ModelNameInput(), "starter_prompts": forms.Textarea(attrs={"rows": 4})}
        help_texts = {
            "starter_prompts": gettext_lazy(
                "One prompt per line, at most four: buttons that fill and send the composer of an empty thread."
            )
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is None and "model_name" in self.fields:
            # Empty means "the endpoint's default" (no endpoint: the offline model); never a name that
            # only the offline model answers to, whatever endpoint is picked.
            self.initial["model_name"] = ""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        endpoint = cleaned.get("endpoint")
        if endpoint is None or "model_name" in self.errors or "model_name" not in self.fields:
            return cleaned
        if self.instance.pk is not None and not {"endpoint", "model_name"} & set(self.changed_data):
            return cleaned  # nothing about the model changed: no need to ask the endpoint
        name = cleaned.get("model_name") or endpoint.default_model
        if name == OFFLINE_MODEL_NAME:
            return cleaned  # Agent.clean says why (no endpoint serves that one)
        try:
            listed = endpoint_models(endpoint)
        except EndpointModelsUnavailable:
            return cleaned  # the endpoint's list is not known: nothing to check the name against
        if not name and len(listed) == 1:
            # No name and no default, but the endpoint serves one model only: that one, as the form's
            # script picks it when the endpoint is chosen.
            cleaned["model_name"] = listed[0]
        elif name and name not in listed:
            shown = ", ".join(listed[:LISTED_IN_ERROR]) + (" …" if len(listed) > LISTED_IN_ERROR else "")
            self.add_error(
                "model_name",
                _("The endpoint %(endpoint)s does not list a model named %(name)s. It lists: %(names)s.")
                % {"endpoint": endpoint.name, "name": name, "names": shown},
            )
        return cleaned  # no name and several models: Agent.clean says a model must be named

    def _post_clean(self) -> None:
        # A name the form refused never reaches the instance, which then still holds the field's
        # default (the offline model's name): the model's own checks would add an error about a name
        # nobody typed, and the figures beside the threshold would describe that model. The form's
        # refusal is the only word on that field, and the figures are the typed name's.
        refused = list(self.errors.get("model_name", []))
        super()._post_clean()
        if refused:
            self._errors["model_name"] = self.error_class(refused)
            typed = self.data.get(self.add_prefix("model_name")) or ""
            self.instance.model_name = str(typed).strip()[: Agent._meta.get_field("model_name").max_length]
