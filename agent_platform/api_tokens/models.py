"""API tokens: a bearer token per non-browser client, stored as its SHA-256, with its owner and use."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


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

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(verbose_name=_("name"), max_length=100, blank=True)
    key_hash = models.CharField(verbose_name=_("key hash"), max_length=64, unique=True, editable=False)
    key_prefix = models.CharField(verbose_name=_("key prefix"), max_length=12, editable=False)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    last_used_at = models.DateTimeField(verbose_name=_("last used at"), null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(verbose_name=_("revoked at"), null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")

    def __str__(self) -> str:
        return f"{self.key_prefix}… ({self.user})"

    @staticmethod
    def hash(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()
