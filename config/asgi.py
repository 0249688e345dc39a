"""ASGI entry point: HTTP through Django, WebSockets through Channels."""

import os

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from django.conf import settings
from django.core.asgi import get_asgi_application

from config.ws_origin import SameOriginValidator

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Django's app registry first: the body gate (API tokens) and the consumers import models, so their
# imports wait for it (the late import of Channels' own ASGI example).
django_asgi_app = get_asgi_application()

from config.body_gate import BodyGate  # noqa: E402
from config.error_bodies import ErrorBodies  # noqa: E402
from conversations.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # Every error answer with a body that says why (``config.error_bodies``).
        "http": ErrorBodies(BodyGate(django_asgi_app)),
        # Same origin (scheme, host, port), not only an allowed host: ``config.ws_origin``.
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# Runs executing in this process (the embedded default): those a previous server process left running
# or queued are this one's to recover, at start and then whenever a lease runs out.
if settings.RUN_EXECUTION == "inprocess" and settings.RUN_RECOVERY_TIMER:
    from conversations.services.recovery import recovery_timer_start

    recovery_timer_start(first_pass_now=True)
