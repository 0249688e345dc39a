"""WebSocket routes. The thread id is checked in ``ThreadConsumer.connect`` rather than by a ``uuid``
converter, so a malformed path is closed with a code instead of failing in the router."""

from __future__ import annotations

from django.urls import path, re_path

from conversations.consumers import NoRouteConsumer, ThreadConsumer

websocket_urlpatterns = [
    path("ws/threads/<str:thread_id>/", ThreadConsumer.as_asgi()),
    re_path(r"", NoRouteConsumer.as_asgi()),
]
