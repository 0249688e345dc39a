"""An open thread socket re-checks access: a withdrawn permission, a deactivated user or a deleted
session closes it (4403) at the next event once the recheck period has passed; a logout closes the
sockets of that session at once (4401). On the in-memory channel layer and on channels_redis."""

from __future__ import annotations

import os

import pytest
from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings

from conversations import consumers
from conversations.events import broadcast
from conversations.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)

LAYERS = {
    "memory": {"BACKEND": "channels.layers.InMemoryChannelLayer"},
    "redis": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/12")],
            "prefix": "wt-socket",
        },
    },
}


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def layer(request, settings):
    settings.CHANNEL_LAYERS = {"default": LAYERS[request.param]}
    channel_layers.backends.clear()  # the next get_channel_layer() builds the layer just configured
    yield request.param
    channel_layers.backends.clear()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch, settings):
    settings.SOCKET_ACCESS_RECHECK_SECONDS = 5
    fake = Clock()
    monkeypatch.setattr(consumers, "_clock", fake)
    return fake


def _event(thread, n: int) -> None:
    broadcast(thread.thread_id, "state", token_usage={"n": n})


async def _open(thread, *, user=None, session_key: str | None = None) -> WebsocketCommunicator:
    headers = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
    if session_key:
        headers.append((b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={session_key}".encode()))
    communicator = WebsocketCommunicator(
        AuthMiddlewareStack(URLRouter(websocket_urlpatterns)), f"/ws/threads/{thread.thread_id}/", headers
    )
    if user is not None:
        communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def _login(client, user) -> str:
    await sync_to_async(client.force_login)(user)
    return client.cookies[django_settings.SESSION_COOKIE_NAME].value


async def _grant_view(user) -> None:
    from django.contrib.auth.models import Permission

    permission = await sync_to_async(Permission.objects.get)(codename="view_conversation")
    await sync_to_async(user.user_permissions.add)(permission)


async def test_a_withdrawn_permission_closes_the_socket_once_the_period_has_passed(
    layer, clock, thread, staff_user, client
):
    await _grant_view(staff_user)
    socket = await _open(thread, session_key=await _login(client, staff_user))
    await sync_to_async(_event)(thread, 1)
    assert (await socket.receive_json_from(timeout=3))["token_usage"] == {"n": 1}

    await sync_to_async(staff_user.user_permissions.clear)()
    await sync_to_async(_event)(thread, 2)  # within the period: the socket's decision stands
    assert (await socket.receive_json_from(timeout=3))["token_usage"] == {"n": 2}

    clock.now += 5
    await sync_to_async(_event)(thread, 3)
    assert await socket.receive_output(timeout=3) == {"type": "websocket.close", "code": 4403}
    await sync_to_async(_event)(thread, 4)
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()


async def test_the_owner_keeps_receiving_after_the_period(layer, clock, thread, user, client):
    socket = await _open(thread, session_key=await _login(client, user))
    for n in range(3):
        clock.now += 10
        await sync_to_async(_event)(thread, n)
        assert (await socket.receive_json_from(timeout=3))["token_usage"] == {"n": n}
    await socket.disconnect()


async def test_logout_closes_that_sessions_sockets_and_not_another_sessions(layer, clock, thread, user):
    from django.test import AsyncClient, Client

    first, second = Client(), AsyncClient()
    signed_out = await _open(thread, session_key=await _login(first, user))
    await sync_to_async(second.force_login)(user)
    still_in = await _open(thread, session_key=second.cookies[django_settings.SESSION_COOKIE_NAME].value)

    response = await sync_to_async(first.post)("/accounts/logout/")
    assert response.status_code == 302
    assert await signed_out.receive_output(timeout=3) == {"type": "websocket.close", "code": 4401}

    clock.now += 10  # the other session still authenticates the owner
    await sync_to_async(_event)(thread, 1)
    assert (await still_in.receive_json_from(timeout=3))["token_usage"] == {"n": 1}
    assert await signed_out.receive_nothing(timeout=0.3)
    await still_in.disconnect()


async def test_a_socket_without_a_session_is_closed_by_its_users_logout(layer, clock, thread, user, client):
    socket = await _open(thread, user=user)
    await sync_to_async(client.force_login)(user)
    await sync_to_async(client.post)("/accounts/logout/")
    assert await socket.receive_output(timeout=3) == {"type": "websocket.close", "code": 4401}


@pytest.mark.parametrize("how", ["deactivated", "session_deleted", "password_changed"])
async def test_a_session_that_no_longer_authenticates_closes_the_socket(
    layer, clock, thread, user, client, how
):
    from django.contrib.sessions.models import Session

    session_key = await _login(client, user)
    socket = await _open(thread, session_key=session_key)
    if how == "deactivated":
        user.is_active = False
        await sync_to_async(user.save)()
    elif how == "session_deleted":  # expired and cleared, or removed by an operator
        await sync_to_async(Session.objects.filter(session_key=session_key).delete)()
    else:  # set by an admin: every older session of the user stops authenticating
        user.set_password("a-new-password-456")
        await sync_to_async(user.save)()

    clock.now += 5
    await sync_to_async(_event)(thread, 1)
    assert await socket.receive_output(timeout=3) == {"type": "websocket.close", "code": 4403}
