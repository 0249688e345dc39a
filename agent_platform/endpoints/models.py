"""The model endpoint table: an OpenAI-compatible server, the variable naming its key, and its prices."""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from agent_platform.key_bindings import binding_error, key_env_error

MIN_CONTEXT_WINDOW = 1024
CACHE_PRICE_FIELDS = ("cached_input_price_per_million", "cache_write_price_per_million")


class ModelEndpoint(models.Model):
    """An OpenAI-compatible server and the environment variable holding its key (never the key).

    A key is only ever sent to its own endpoint's URL, and only when the operator bound the variable to
    that URL's origin (``MODEL_KEY_BINDINGS``): agents pick an endpoint, never a URL or a key variable,
    and only holders of ``manage_model_endpoints`` create or change endpoints.
    """

    name = models.CharField(verbose_name=_("name"), max_length=100, unique=True)
    base_url = models.URLField(
        verbose_name=_("base URL"),
        max_length=500,
        help_text=_("OpenAI-compatible base URL, e.g. https://api.openai.com/v1."),
    )
    api_key_env = models.CharField(
        verbose_name=_("API key variable"),
        max_length=100,
        blank=True,
        help_text=_(
            "Name of the environment variable holding this endpoint's key (the key itself is never "
            "stored). Must match MODEL_KEY_ENV_ALLOWLIST. Empty: a server that needs no key."
        ),
    )
    default_model = models.CharField(
        verbose_name=_("default model"),
        max_length=200,
        blank=True,
        help_text=_("Model used by agents that name none."),
    )
    context_window = models.PositiveIntegerField(
        verbose_name=_("context window"),
        null=True,
        blank=True,
        help_text=_("Max input tokens of the default model, when the known-models table lacks it."),
    )
    supports_vision = models.BooleanField(
        verbose_name=_("supports vision"),
        default=False,
        help_text=_("The endpoint's models accept image inputs."),
    )
    # Prices for usage accounting, in any one currency: both set, or neither (then usage has no cost).
    input_price_per_million = models.DecimalField(
        verbose_name=_("input price per million tokens"),
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text=_("What the provider charges for a million prompt tokens. Empty: not priced."),
    )
    output_price_per_million = models.DecimalField(
        verbose_name=_("output price per million tokens"),
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text=_("What the provider charges for a million completion tokens. Empty: not priced."),
    )
    # Prompt tokens the provider served from its prompt cache, and those it wrote to it: priced apart
    # when set (only with the two prices above); empty: billed at the input price.
    cached_input_price_per_million = models.DecimalField(
        verbose_name=_("cached input price per million tokens"),
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text=_(
            "What the provider charges for a million prompt tokens read from its prompt cache. "
            "Empty: the input price."
        ),
    )
    cache_write_price_per_million = models.DecimalField(
        verbose_name=_("cache write price per million tokens"),
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text=_(
            "What the provider charges for a million prompt tokens written to its prompt cache "
            "(Anthropic). Empty: the input price."
        ),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("model endpoint")
        verbose_name_plural = _("model endpoints")
        ordering = ["name"]
        # Only "view" by default: adding, changing and deleting all need the one dedicated permission.
        default_permissions = ("view",)
        permissions = [("manage_model_endpoints", "Can create, change and delete model endpoints")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str | Promise] = {}
        if self.api_key_env and (problem := key_env_error(self.api_key_env)):
            errors["api_key_env"] = problem
        elif problem := binding_error(key_env=self.api_key_env, url=self.base_url or ""):
            errors["base_url"] = problem
        if problem := context_window_error(self.context_window):
            errors["context_window"] = problem
        prices = (self.input_price_per_million, self.output_price_per_million)
        if (prices[0] is None) != (prices[1] is None):
            missing = "output_price_per_million" if prices[1] is None else "input_price_per_million"
            errors[missing] = _("Set both prices, or neither.")
        if any(price is not None and price < 0 for price in prices):
            errors["input_price_per_million"] = _("A price cannot be negative.")
        for name in CACHE_PRICE_FIELDS:
            price = getattr(self, name)
            if price is not None and prices[0] is None:
                errors[name] = _("Set the input and output prices first.")
            elif price is not None and price < 0:
                errors[name] = _("A price cannot be negative.")
        if errors:
            raise ValidationError(errors)

    def cost(
        self,
        *,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> Decimal | None:
        """What these tokens cost at this endpoint's prices now; None when it is not priced.
        ``input_tokens`` includes the cached ones: those read from the provider's cache are billed at
        the cached price, those written to it at the cache-write price, the rest at the input price."""
        if self.input_price_per_million is None or self.output_price_per_million is None:
            return None
        read = min(max(cache_read_tokens, 0), input_tokens)
        write = min(max(cache_write_tokens, 0), input_tokens - read)
        input_price = self.input_price_per_million
        read_price = self.cached_input_price_per_million
        write_price = self.cache_write_price_per_million
        total = (
            (input_tokens - read - write) * input_price
            + read * (input_price if read_price is None else read_price)
            + write * (input_price if write_price is None else write_price)
            + output_tokens * self.output_price_per_million
        )
        return (total / Decimal(1_000_000)).quantize(Decimal("0.000001"))


def context_window_error(window: int | None) -> str | None:
    """The form error of a context window set below what a conversation needs, or None."""
    if window is not None and window < MIN_CONTEXT_WINDOW:
        return _("A context window below %(min)s tokens cannot hold a conversation.") % {
            "min": MIN_CONTEXT_WINDOW
        }
    return None
