"""API authentication: the browser's session (with CSRF) or a bearer token for other clients."""

from __future__ import annotations

from django.http import HttpRequest
from ninja.security import HttpBearer, django_auth

from agent_platform.models import ApiToken


class BearerTokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str):
        user = ApiToken.objects.authenticate(token)
        if user is None:
            return None
        request.user = user
        return user


api_auth = [BearerTokenAuth(), django_auth]
