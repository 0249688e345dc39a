"""WebSocket routes."""

from __future__ import annotations

from django.urls import path

from conversations.consumers import ThreadConsumer

websocket_urlpatterns = [
    path("ws/threads/<uuid:thread_id>/", ThreadConsumer.as_asgi()),
]
