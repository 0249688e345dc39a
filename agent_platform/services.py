"""Writes of platform configuration: API tokens and the demo seed."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.utils import timezone

from agent_platform.models import ApiToken


def api_token_issue(*, user: AbstractBaseUser, name: str = "") -> tuple[ApiToken, str]:
    """Create a token and return it with its raw value, which is shown once and never stored."""
    raw = ApiToken.PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, key_hash=ApiToken.hash(raw), key_prefix=raw[:10])
    return token, raw


def api_token_revoke(*, tokens: QuerySet[ApiToken]) -> int:
    """Revoke the tokens not yet revoked; returns how many were. A revoked token stays revoked."""
    return tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
