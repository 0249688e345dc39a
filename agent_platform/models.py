"""Admin-only agent configuration: agents, and the registry of the app's models kept in sub-packages
(model endpoints: ``endpoints.models``; API tokens: ``api_tokens.models``)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

# The app's models kept in their own modules (they import nothing from here): importing them here
# registers them with the app, and the redundant aliases mark them as re-exported.
from agent_platform.api_tokens.models import ApiToken as ApiToken
from agent_platform.api_tokens.models import ApiTokenQuerySet as ApiTokenQuerySet
from agent_platform.calibration.models import TokenCalibration as TokenCalibration
from agent_platform.endpoints.models import ModelEndpoint as ModelEndpoint
from agent_platform.endpoints.models import context_window_error
from agent_platform.key_bindings import key_env_error as key_env_error
from agent_platform.knowledge.models import Chunk as Chunk
from agent_platform.knowledge.models import Document as Document
from agent_platform.knowledge.models import KnowledgeBase as KnowledgeBase
from agent_platform.model_catalog import OFFLINE_MODEL_NAME, context_window_for
from context_engine.config import (
    COMPRESSION_CAPABILITY,
    DEFAULT_INDEX_PERCENT,
    DEFAULT_KEEP_MESSAGES,
    DEFAULT_PINNED_TOKEN_LIMIT,
    DEFAULT_SUMMARY_CALLS_PER_HOUR,
    DEFAULT_THRESHOLD_K,
    DEFAULT_TOOL_RESULT_TOKEN_LIMIT,
    MAX_INDEX_PERCENT,
    BreakerLimits,
    CompressionConfig,
    SpendLimits,
    effective_trigger,
)
from context_engine.formats import DEFAULT_SUMMARY_PROMPT
from context_engine.summary.history import validate_summary_prompt

TOOL_CHOICES = [
    ("query_kb", "query_kb: search the knowledge bases"),
    ("web_search", "web_search: search the web"),
    ("ls", "ls: list workdir files"),
    ("read_file", "read_file: read a workdir file"),
    ("write_file", "write_file: write a workdir file"),
    ("edit_file", "edit_file: edit a workdir file"),
    ("ask_user", "ask_user: ask the user a question"),
    ("task", "task: delegate to a sub-agent"),
]
TOOL_NAMES = [name for name, _label in TOOL_CHOICES]
CAPABILITY_CHOICES = [(COMPRESSION_CAPABILITY, f"{COMPRESSION_CAPABILITY}: manual and bulk compression")]
# Where an agent's context window comes from (``Agent.context_window_source``), in the order tried.
WINDOW_FROM_FIELD, WINDOW_FROM_ENDPOINT, WINDOW_FROM_TABLE, WINDOW_UNKNOWN = (
    "field",
    "endpoint",
    "table",
    "none",
)
COMPRESSION_FIELDS = (
    "summary_threshold",
    "summary_keep_messages",
    "summary_prompt",
    "summary_required",
    "summary_tool_result_token_limit",
    "summary_pinned_token_limit",
    "summary_repair_pass",
    "summary_index_percent",
    "summary_max_calls_per_hour",
    "summary_max_input_tokens_per_hour",
    "summary_max_cost_per_hour",
)


def _default_tools() -> list[str]:
    return list(TOOL_NAMES)


def _default_capabilities() -> list[str]:
    return [COMPRESSION_CAPABILITY]


class Agent(models.Model):
    name = models.CharField(verbose_name=_("name"), max_length=100)
    slug = models.SlugField(verbose_name=_("slug"), unique=True)
    description = models.TextField(verbose_name=_("description"), blank=True)
    starter_prompts = models.TextField(verbose_name=_("starter prompts"), blank=True)  # agent_starters
    system_prompt = models.TextField(
        verbose_name=_("system prompt"),
        blank=True,
        default="You are a helpful assistant. Use tools when they help.",
    )
    is_enabled = models.BooleanField(verbose_name=_("is enabled"), default=True)

    endpoint = models.ForeignKey(
        ModelEndpoint,
        verbose_name=_("endpoint"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="agents",
        help_text=_("The model server. Empty: the built-in offline model (no network)."),
    )
    model_name = models.CharField(
        verbose_name=_("model name"),
        max_length=200,
        blank=True,
        default=OFFLINE_MODEL_NAME,
        help_text=_("Empty: the endpoint's default model."),
    )
    temperature = models.FloatField(verbose_name=_("temperature"), default=0.2)
    context_window = models.PositiveIntegerField(
        verbose_name=_("context window"),
        null=True,
        blank=True,
        help_text=_("Max input tokens of the model. Leave empty to use the known-models table."),
    )
    tools = models.JSONField(verbose_name=_("tools"), default=_default_tools, blank=True)
    capabilities = models.JSONField(verbose_name=_("capabilities"), default=_default_capabilities, blank=True)

    summary_threshold = models.PositiveIntegerField(
        verbose_name=_("summary threshold"),
        default=DEFAULT_THRESHOLD_K,
        help_text=_(
            "The one context-pressure budget, in K tokens (×1024). At most 0.9 × the context window."
        ),
    )
    summary_keep_messages = models.PositiveIntegerField(
        verbose_name=_("summary keep messages"),
        default=DEFAULT_KEEP_MESSAGES,
        help_text=_(
            "Recent messages kept verbatim after a summary (a tool call is never split from its results)."
        ),
    )
    summary_prompt = models.TextField(
        verbose_name=_("summary prompt"),
        default=DEFAULT_SUMMARY_PROMPT,
        help_text=_("Prompt for summaries. Must contain {messages}; other braces must be doubled."),
    )
    summary_required = models.TextField(
        verbose_name=_("a summary must contain"),
        blank=True,
        default="",
        help_text=_(
            "With a custom summary prompt: the lines a valid summary must contain, one per line, in this "
            "order (e.g. its headings). Empty: a length in proportion to what was folded, and not markup, a "
            "JSON object or a refusal. The default prompt always requires its five headings."
        ),
    )
    summary_tool_result_token_limit = models.PositiveIntegerField(
        verbose_name=_("summary tool result token limit"),
        default=DEFAULT_TOOL_RESULT_TOKEN_LIMIT,
        help_text=_(
            "A tool result above this many estimated tokens is saved to a file and previewed in this many "
            "tokens. 0 saves every tool result, with no preview."
        ),
    )
    summary_pinned_token_limit = models.PositiveIntegerField(
        default=DEFAULT_PINNED_TOKEN_LIMIT,
        help_text=_(
            "Most estimated tokens a thread's pinned messages may take (never more than a quarter of the "
            "trigger). A pin over it is refused."
        ),
    )
    summary_repair_pass = models.BooleanField(
        default=False,
        help_text=_(
            "When a summary loses identifiers (paths, URLs, ids), ask once more with them listed as "
            "must-keep and keep the better summary. Costs one more summary call when it happens."
        ),
    )
    summary_index_percent = models.PositiveSmallIntegerField(
        verbose_name=_("reference index budget (percent of the trigger)"),
        default=DEFAULT_INDEX_PERCENT,
        validators=[MaxValueValidator(MAX_INDEX_PERCENT)],
        help_text=_(
            "After every summary, the identifiers it left out (paths, URLs, ids) are listed with the line "
            "of the history file where each appears, in at most this share of the trigger. 0 turns the "
            "index off."
        ),
    )
    summary_max_calls_per_hour = models.PositiveIntegerField(
        default=DEFAULT_SUMMARY_CALLS_PER_HOUR,
        help_text=_(
            "Spend guard: at most this many summary calls per thread per hour (0: no limit). When it "
            "holds a summary back, the request goes out compacted."
        ),
    )
    summary_max_input_tokens_per_hour = models.PositiveIntegerField(
        default=0,
        help_text=_("Spend guard: at most this many summary input tokens per thread per hour (0: no limit)."),
    )
    summary_max_cost_per_hour = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text=_(
            "Spend guard: at most this much summary input cost per thread per hour, at the endpoint's "
            "input price (empty: no limit). With a token limit too, the stricter one holds."
        ),
    )

    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
        ordering = ["name"]
        permissions = [("tune_compression", "Can tune context compression settings")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # One check per concern; each names at most one error per field, so the order of the
        # form's errors is the order of these checks.
        errors: dict[str, str] = {}
        for check in (
            self._compression_errors,
            self._choice_errors,
            self._model_errors,
            self._window_errors,
        ):
            errors.update(check())
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            errors["temperature"] = _("Temperature must be between 0 and 2.")
        if errors:
            raise ValidationError(errors)

    def _compression_errors(self) -> dict[str, str]:
        errors: dict[str, str] = {}
        if not self.summary_threshold or self.summary_threshold <= 0:
            errors["summary_threshold"] = _("The threshold must be greater than 0.")
        if not self.summary_keep_messages or self.summary_keep_messages < 1:
            errors["summary_keep_messages"] = _("Keep at least 1 message.")
        if self.summary_tool_result_token_limit is None or self.summary_tool_result_token_limit < 0:
            errors["summary_tool_result_token_limit"] = _("The limit must be 0 or more.")
        if prompt_error := summary_prompt_error(self.summary_prompt):
            errors["summary_prompt"] = prompt_error
        if self.summary_max_cost_per_hour is not None:
            if self.summary_max_cost_per_hour <= 0:
                errors["summary_max_cost_per_hour"] = _(
                    "A cost limit must be greater than 0 (empty: no limit)."
                )
            elif self.endpoint is None or self.endpoint.input_price_per_million is None:
                errors["summary_max_cost_per_hour"] = _(
                    "The endpoint has no prices: limit the summary input tokens instead."
                )
        return errors

    def _choice_errors(self) -> dict[str, str]:
        """Tools and capabilities: lists of known names only."""
        errors: dict[str, str] = {}
        unknown_tools = sorted(set(self.tools or []) - set(TOOL_NAMES))
        if not isinstance(self.tools, list) or unknown_tools:
            errors["tools"] = _("Unknown tools: %(names)s") % {"names": ", ".join(map(str, unknown_tools))}
        known_caps = {name for name, _label in CAPABILITY_CHOICES}
        if not isinstance(self.capabilities, list) or set(self.capabilities or []) - known_caps:
            errors["capabilities"] = _("Unknown capabilities.")
        return errors

    def _model_errors(self) -> dict[str, str]:
        """With an endpoint, a model it serves: named here or its default, never the offline model."""
        errors: dict[str, str] = {}
        if self.endpoint_id is not None and not self.resolved_model_name:
            errors["model_name"] = _("Name a model: this endpoint has no default model.")
        elif self.endpoint_id is not None and self.model_name == OFFLINE_MODEL_NAME:
            errors["model_name"] = _(
                "%(name)s is the built-in offline model, which no endpoint serves: name the endpoint's "
                "model, or leave this empty for its default."
            ) % {"name": OFFLINE_MODEL_NAME}
        return errors

    def _window_errors(self) -> dict[str, str]:
        errors: dict[str, str] = {}
        if problem := context_window_error(self.context_window):
            errors["context_window"] = problem
        elif self.resolved_context_window is None:
            errors["context_window"] = _(
                "This model is not in the known-models table: enter its context window (max input tokens)."
            )
        return errors

    @property
    def sees_images(self) -> bool:
        """Whether image attachments reach the model as images (else as a note with path and size)."""
        return self.endpoint is not None and self.endpoint.supports_vision

    @property
    def resolved_model_name(self) -> str:
        """The model name sent to the endpoint: the agent's, else the endpoint's default."""
        if self.model_name or self.endpoint is None:
            return self.model_name or OFFLINE_MODEL_NAME
        return self.endpoint.default_model

    @property
    def resolved_context_window(self) -> int | None:
        """The agent's window, else the endpoint's (for its default model), else the known-models table."""
        return self.context_window_source[0]

    @property
    def context_window_source(self) -> tuple[int | None, str]:
        """The resolved window and where it came from: one of ``WINDOW_SOURCES`` (``"none"`` if unknown)."""
        if self.context_window:
            return self.context_window, WINDOW_FROM_FIELD
        if self.endpoint is not None and self.resolved_model_name == self.endpoint.default_model:
            if self.endpoint.context_window:
                return self.endpoint.context_window, WINDOW_FROM_ENDPOINT
        known = context_window_for(self.resolved_model_name)
        return (known, WINDOW_FROM_TABLE) if known else (None, WINDOW_UNKNOWN)

    @property
    def effective_trigger(self) -> int:
        return effective_trigger(
            summary_threshold_k=self.summary_threshold, context_window=self.resolved_context_window
        )

    def has_capability(self, name: str) -> bool:
        return name in (self.capabilities or [])

    @property
    def summary_input_token_cap(self) -> int:
        """The spend guard's summary input tokens per thread and hour (0: no limit): the token limit, or
        the cost limit at the endpoint's input price, whichever is stricter."""
        tokens = self.summary_max_input_tokens_per_hour or 0
        cost, endpoint = self.summary_max_cost_per_hour, self.endpoint
        price = endpoint.input_price_per_million if endpoint is not None else None
        if cost is None or cost <= 0 or not price or price <= 0:
            return tokens
        by_cost = max(int(cost * 1_000_000 / price), 1)
        return min(tokens, by_cost) if tokens else by_cost

    def compression_config(self) -> CompressionConfig:
        return CompressionConfig(
            trigger_tokens=self.effective_trigger,
            keep_messages=self.summary_keep_messages,
            summary_prompt=self.summary_prompt,
            summary_required=tuple(self.summary_required.splitlines()),
            tool_result_token_limit=self.summary_tool_result_token_limit,
            tool_arg_max_length=settings.COMPRESSION_TOOL_ARG_MAX_LENGTH,
            context_window=self.resolved_context_window,
            model_name=self.resolved_model_name,
            pinned_token_limit=self.summary_pinned_token_limit,
            repair_pass=self.summary_repair_pass,
            index_percent=self.summary_index_percent,
            low_water_percent=settings.COMPACTION_LOW_WATER_PERCENT,
            spend=SpendLimits(
                max_calls_per_hour=self.summary_max_calls_per_hour,
                max_input_tokens_per_hour=self.summary_input_token_cap,
            ),
            breaker=BreakerLimits(
                refusals=settings.SUMMARY_BREAKER_REFUSALS,
                window_seconds=settings.SUMMARY_BREAKER_WINDOW_SECONDS,
                cooldown_seconds=settings.SUMMARY_BREAKER_COOLDOWN_SECONDS,
            ),
        )


def summary_prompt_error(prompt: str | None) -> str | None:
    """The form error of a summary prompt, or None: ``{messages}`` once, and no other placeholder."""
    try:
        validate_summary_prompt(prompt or "")
    except ValueError as exc:
        return str(exc)
    return None
