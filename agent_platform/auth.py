"""API authentication: the browser's session (with CSRF) or a bearer token for other clients.

A request with neither (or with a wrong or revoked token) is unauthenticated: 401, never a CSRF 403.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja.security import HttpBearer, SessionAuth

from agent_platform.models import ApiToken


class BearerTokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str):
        user = ApiToken.objects.authenticate(token)
        if user is None:
            return None
        request.user = user
        return user


class BrowserSessionAuth(SessionAuth):
    """Django's session; CSRF is checked only when there is a logged-in session to protect."""

    def _get_key(self, request: HttpRequest) -> str | None:
        if not request.user.is_authenticated:
            return None  # nothing to forge: authentication fails with 401
        return super()._get_key(request)


api_auth = [BearerTokenAuth(), BrowserSessionAuth()]
