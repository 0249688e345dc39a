"""Admin-only agent configuration and API tokens."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from agent_platform.model_catalog import OFFLINE_MODEL_NAME, context_window_for
from compression.engine.budget import effective_trigger
from compression.engine.config import (
    DEFAULT_KEEP_MESSAGES,
    DEFAULT_THRESHOLD_K,
    DEFAULT_TOOL_RESULT_TOKEN_LIMIT,
    CompressionConfig,
)
from compression.engine.formats import DEFAULT_SUMMARY_PROMPT

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
CAPABILITY_CHOICES = [("context_compression", "context_compression: manual and bulk compression")]
MIN_CONTEXT_WINDOW = 1024
COMPRESSION_FIELDS = (
    "summary_threshold",
    "summary_keep_messages",
    "summary_prompt",
    "summary_tool_result_token_limit",
)


def _default_tools() -> list[str]:
    return list(TOOL_NAMES)


def _default_capabilities() -> list[str]:
    return ["context_compression"]


class Agent(models.Model):
    class Provider(models.TextChoices):
        OFFLINE = "offline", _("Offline deterministic model")
        OPENAI = "openai", _("OpenAI-compatible endpoint")

    name = models.CharField(max_length=100)
    slug = models.SlugField(unique=True)
    description = models.TextField(blank=True)
    system_prompt = models.TextField(
        blank=True, default="You are a helpful assistant. Use tools when they help."
    )
    is_enabled = models.BooleanField(default=True)

    provider = models.CharField(max_length=20, choices=Provider.choices, default=Provider.OFFLINE)
    model_name = models.CharField(max_length=200, default=OFFLINE_MODEL_NAME)
    base_url = models.URLField(
        blank=True, help_text=_("OpenAI-compatible base URL, e.g. http://localhost:8001/v1.")
    )
    api_key_env = models.CharField(
        max_length=100,
        default="OPENAI_API_KEY",
        help_text=_(
            "Name of the environment variable that holds the API key (the key itself is never stored)."
        ),
    )
    temperature = models.FloatField(default=0.2)
    context_window = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=_("Max input tokens of the model. Leave empty to use the known-models table."),
    )
    tools = models.JSONField(default=_default_tools, blank=True)
    capabilities = models.JSONField(default=_default_capabilities, blank=True)

    summary_threshold = models.PositiveIntegerField(
        default=DEFAULT_THRESHOLD_K,
        help_text=_(
            "The one context-pressure budget, in K tokens (×1024). Capped at 90% of the context window."
        ),
    )
    summary_keep_messages = models.PositiveIntegerField(
        default=DEFAULT_KEEP_MESSAGES,
        help_text=_(
            "Recent messages kept verbatim after a summary (a tool call is never split from its results)."
        ),
    )
    summary_prompt = models.TextField(
        default=DEFAULT_SUMMARY_PROMPT,
        help_text=_("Prompt for summaries. Must contain {messages}; other braces must be doubled."),
    )
    summary_tool_result_token_limit = models.PositiveIntegerField(
        default=DEFAULT_TOOL_RESULT_TOKEN_LIMIT,
        help_text=_(
            "A tool result above this many estimated tokens is saved to a file and previewed in this many "
            "tokens. 0 saves every tool result, with no preview."
        ),
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        permissions = [("tune_compression", "Can tune context compression settings")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if not self.summary_threshold or self.summary_threshold <= 0:
            errors["summary_threshold"] = _("The threshold must be greater than 0.")
        if not self.summary_keep_messages or self.summary_keep_messages < 1:
            errors["summary_keep_messages"] = _("Keep at least 1 message.")
        if self.summary_tool_result_token_limit is None or self.summary_tool_result_token_limit < 0:
            errors["summary_tool_result_token_limit"] = _("The limit must be 0 or more.")
        prompt_error = summary_prompt_error(self.summary_prompt)
        if prompt_error:
            errors["summary_prompt"] = prompt_error
        unknown_tools = sorted(set(self.tools or []) - set(TOOL_NAMES))
        if not isinstance(self.tools, list) or unknown_tools:
            errors["tools"] = _("Unknown tools: %(names)s") % {"names": ", ".join(map(str, unknown_tools))}
        known_caps = {name for name, _label in CAPABILITY_CHOICES}
        if not isinstance(self.capabilities, list) or set(self.capabilities or []) - known_caps:
            errors["capabilities"] = _("Unknown capabilities.")
        if self.provider == self.Provider.OPENAI and not self.model_name:
            errors["model_name"] = _("An OpenAI-compatible agent needs a model name.")
        if self.context_window is not None and self.context_window < MIN_CONTEXT_WINDOW:
            errors["context_window"] = _(
                "A context window below %(min)s tokens cannot hold a conversation."
            ) % {"min": MIN_CONTEXT_WINDOW}
        elif self.resolved_context_window is None:
            errors["context_window"] = _(
                "This model is not in the known-models table: enter its context window (max input tokens)."
            )
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            errors["temperature"] = _("Temperature must be between 0 and 2.")
        if errors:
            raise ValidationError(errors)

    @property
    def resolved_context_window(self) -> int | None:
        return self.context_window or context_window_for(self.model_name)

    @property
    def effective_trigger(self) -> int:
        return effective_trigger(
            summary_threshold_k=self.summary_threshold, context_window=self.resolved_context_window
        )

    def has_capability(self, name: str) -> bool:
        return name in (self.capabilities or [])

    def compression_config(self) -> CompressionConfig:
        return CompressionConfig(
            trigger_tokens=self.effective_trigger,
            keep_messages=self.summary_keep_messages,
            summary_prompt=self.summary_prompt,
            tool_result_token_limit=self.summary_tool_result_token_limit,
            tool_arg_max_length=settings.COMPRESSION_TOOL_ARG_MAX_LENGTH,
            context_window=self.resolved_context_window,
            model_name=self.model_name,
        )


def summary_prompt_error(prompt: str | None) -> str | None:
    if not prompt or "{messages}" not in prompt:
        return str(_("The prompt must contain {messages}."))
    try:
        prompt.format(messages="")
    # AttributeError/TypeError: {messages.x} and {messages[key]} on a str.
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        return str(
            _("The prompt does not format: %(error)s. Double any literal braces: {{ }}.") % {"error": exc}
        )
    return None


class ApiTokenQuerySet(models.QuerySet):
    def authenticate(self, raw: str):
        """The active user owning this raw token, or None; records when it was last used."""
        token = (
            self.filter(key_hash=ApiToken.hash(raw), revoked_at__isnull=True, user__is_active=True)
            .select_related("user")
            .first()
        )
        if token is None:
            return None
        self.filter(pk=token.pk).update(last_used_at=timezone.now())
        return token.user


class ApiToken(models.Model):
    """A bearer token for non-browser clients. Only its SHA-256 is stored."""

    PREFIX = "ap_"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    key_prefix = models.CharField(max_length=12, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.key_prefix}… ({self.user})"

    @staticmethod
    def hash(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()


# Knowledge-base models live in their own module; importing them here registers them with the app.
from agent_platform.knowledge.models import Chunk, Document, KnowledgeBase  # noqa: E402, F401
