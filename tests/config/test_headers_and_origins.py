"""Headers and origins: a Content-Security-Policy on every page with no inline script; the proxy's
X-Forwarded-Proto believed only when the operator declares trusted proxies; the WebSocket origin
check compares scheme, host and port."""

from __future__ import annotations

import os
import runpy
from html.parser import HTMLParser
from pathlib import Path
from unittest import mock

import pytest
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.urls import reverse

from config.ws_origin import SameOriginValidator
from conversations.routing import websocket_urlpatterns

ROOT = Path(__file__).resolve().parents[2]


class _Scripts(HTMLParser):
    """Every <script> of a page: (attributes, body)."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict, str]] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._open = dict(attrs)
            self.scripts.append((self._open, ""))

    def handle_data(self, data):
        if self._open is not None:
            attrs, body = self.scripts[-1]
            self.scripts[-1] = (attrs, body + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._open = None


def _executable_inline_scripts(html: str) -> list[str]:
    parser = _Scripts()
    parser.feed(html)
    data_blocks = ("application/json", "application/ld+json")
    return [
        body
        for attrs, body in parser.scripts
        if "src" not in attrs and attrs.get("type") not in data_blocks and body.strip()
    ]


def _directives(header: str) -> dict[str, list[str]]:
    directives = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


@pytest.mark.django_db
def test_every_page_has_a_policy_without_inline_script_and_runs_none(client, admin_user, user, thread):
    pages_anonymous = [reverse("login"), "/api/docs"]
    pages_owner = [
        reverse("conversations:thread-list"),
        reverse("conversations:thread-detail", args=[thread.thread_id]),
    ]
    pages_admin = [
        "/admin/",
        "/admin/pressure/",
        reverse("admin:agent_platform_agent_changelist"),
        reverse("admin:agent_platform_agent_add"),
        reverse("admin:conversations_conversation_changelist"),
        reverse("admin:auth_user_change", args=[user.pk]),
    ]
    for login, urls in ((None, pages_anonymous), (user, pages_owner), (admin_user, pages_admin)):
        client.logout()
        if login is not None:
            client.force_login(login)
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, url
            policy = _directives(response["Content-Security-Policy"])
            assert policy["script-src"] == ["'self'"], url
            assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"], url
            assert policy["frame-ancestors"] == ["'none'"] and policy["base-uri"] == ["'none'"], url
            assert "'unsafe-inline'" not in policy["style-src"], url
            assert _executable_inline_scripts(response.content.decode()) == [], url


def test_no_template_of_ours_holds_an_inline_script_or_handler():
    offenders = []
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        parser = _Scripts()
        parser.feed(text)
        if any("src" not in attrs and body.strip() for attrs, body in parser.scripts):
            offenders.append(str(template))
        if " onclick=" in text or " onload=" in text or "javascript:" in text:
            offenders.append(str(template))
    assert offenders == []


def _proxy_header_with(**env: str) -> object:
    """``SECURE_PROXY_SSL_HEADER`` as config/settings.py computes it from ``env``: the module evaluated
    afresh in this process (no Django start-up), os.environ put back afterwards (its .env read too)."""
    values = {"SECRET_KEY": "x" * 64, "DATABASE_URL": "sqlite:////tmp/proxy-check.sqlite3", **env}
    with mock.patch.dict(os.environ, values):
        computed = runpy.run_path(str(ROOT / "config" / "settings.py"))
    return computed.get("SECURE_PROXY_SSL_HEADER")


def test_forwarded_proto_is_believed_only_behind_declared_proxies(monkeypatch):
    monkeypatch.delenv("TRUSTED_PROXY_COUNT", raising=False)
    assert _proxy_header_with(DEBUG="false") is None
    assert _proxy_header_with(DEBUG="false", TRUSTED_PROXY_COUNT="0") is None
    assert _proxy_header_with(DEBUG="false", TRUSTED_PROXY_COUNT="1") == ("HTTP_X_FORWARDED_PROTO", "https")
    assert _proxy_header_with(DEBUG="true", TRUSTED_PROXY_COUNT="1") == ("HTTP_X_FORWARDED_PROTO", "https")


@pytest.mark.django_db
def test_a_forged_forwarded_proto_does_not_make_a_request_secure(client, settings):
    from django.http import HttpRequest

    settings.ALLOWED_HOSTS = ["testserver"]
    request = HttpRequest()
    request.META = {"HTTP_X_FORWARDED_PROTO": "https", "SERVER_NAME": "testserver", "SERVER_PORT": "80"}
    assert settings.SECURE_PROXY_SSL_HEADER is None
    assert request.is_secure() is False


# --- the socket's origin ------------------------------------------------------------------------


async def _handshake(thread, *, origin: str | None, host: str = "testserver", proto: str | None = None):
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if proto is not None:
        headers.append((b"x-forwarded-proto", proto.encode()))
    application = SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
    communicator = WebsocketCommunicator(application, f"/ws/threads/{thread.thread_id}/", headers)
    communicator.scope["user"] = thread.owner
    connected, _ = await communicator.connect()
    if connected:
        await communicator.disconnect()
    return connected


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("origin", "host", "accepted"),
    [
        ("http://testserver", "testserver", True),
        ("http://testserver:8000", "testserver:8000", True),
        ("http://testserver:80", "testserver", True),  # the default port, written out
        ("http://testserver:8080", "testserver:8000", False),  # same host, another port
        ("http://testserver:8000", "testserver", False),
        ("https://testserver", "testserver", False),  # another scheme (the socket is plain ws)
        ("http://evil.example", "testserver", False),
        ("http://testserver.evil.example", "testserver", False),
        ("null", "testserver", False),
        (None, "testserver", False),  # no Origin at all
        ("http://evil.example", "evil.example", False),  # a Host outside ALLOWED_HOSTS
    ],
)
async def test_the_socket_origin_must_match_in_scheme_host_and_port(thread, settings, origin, host, accepted):
    settings.ALLOWED_HOSTS = ["testserver"]
    assert await _handshake(thread, origin=origin, host=host) is accepted


@pytest.mark.django_db(transaction=True)
async def test_behind_a_declared_proxy_the_forwarded_scheme_counts(thread, settings):
    settings.ALLOWED_HOSTS = ["agents.example.com"]
    host = "agents.example.com"
    # No proxy declared: a client's X-Forwarded-Proto changes nothing.
    assert await _handshake(thread, origin="https://agents.example.com", host=host, proto="https") is False
    settings.TRUSTED_PROXY_COUNT = 1
    assert await _handshake(thread, origin="https://agents.example.com", host=host, proto="https") is True
    assert await _handshake(thread, origin="http://agents.example.com", host=host, proto="https") is False
    assert (
        await _handshake(thread, origin="https://agents.example.com:8443", host=host, proto="https") is False
    )


@pytest.mark.django_db(transaction=True)
async def test_a_csrf_trusted_origin_is_accepted_exactly(thread, settings):
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.com"]
    assert await _handshake(thread, origin="https://app.example.com") is True
    assert await _handshake(thread, origin="https://app.example.com:444") is False
    assert await _handshake(thread, origin="http://app.example.com") is False


@pytest.mark.django_db(transaction=True)
async def test_the_served_application_checks_the_port(thread, settings):
    from config.asgi import application

    settings.ALLOWED_HOSTS = ["testserver"]
    for origin, accepted in (("http://testserver:8000", True), ("http://testserver:9000", False)):
        headers = [(b"host", b"testserver:8000"), (b"origin", origin.encode())]
        communicator = WebsocketCommunicator(application, f"/ws/threads/{thread.thread_id}/", headers)
        communicator.scope["user"] = thread.owner
        connected, _ = await communicator.connect()
        assert connected is accepted, origin
        if connected:
            await communicator.disconnect()
