"""The WebSocket origin check: a handshake is accepted only from this site's own pages.

Channels' ``AllowedHostsOriginValidator`` compares the Origin's host with ``ALLOWED_HOSTS`` and
ignores its scheme and port, so a page on ``http://example.com:8080`` (another origin, same host)
could open a logged-in user's sockets. Here the Origin must equal, in scheme, host and port, the origin
the socket was opened on (its Host header; its scheme from ``X-Forwarded-Proto`` when the operator
declared trusted proxies, else the socket's own), or be one of ``CSRF_TRUSTED_ORIGINS`` exactly; the
Host must be allowed. Anything else is closed before the consumer runs, as Channels' validator does.
"""

from __future__ import annotations

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from agent_platform.key_bindings import Origin, url_origin

HTTP_SCHEME = {"ws": "http", "wss": "https", "http": "http", "https": "https"}


def _headers(scope: dict) -> dict[str, str]:
    return {name.decode("latin1").lower(): value.decode("latin1") for name, value in scope.get("headers", [])}


def socket_origin(scope: dict) -> Origin | None:
    """The origin a socket was opened on, as its page's origin would read, or None (no valid Host)."""
    headers = _headers(scope)
    host = headers.get("host", "")
    domain, _port = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    scheme = HTTP_SCHEME.get(scope.get("scheme", "ws"), "http")
    if settings.TRUSTED_PROXY_COUNT and (forwarded := headers.get("x-forwarded-proto")):
        scheme = HTTP_SCHEME.get(forwarded.split(",")[0].strip().lower(), scheme)
    return url_origin(f"{scheme}://{host}")


def origin_allowed(scope: dict) -> bool:
    own = socket_origin(scope)
    origin = url_origin(_headers(scope).get("origin", ""))
    if own is None or origin is None:
        return False
    trusted = {url_origin(entry) for entry in settings.CSRF_TRUSTED_ORIGINS}
    return origin == own or origin in trusted


class SameOriginValidator:
    """ASGI middleware: WebSocket handshakes from another origin are denied (closed, 403)."""

    def __init__(self, application) -> None:
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier.as_asgi()(scope, receive, send)
        return await self.application(scope, receive, send)
