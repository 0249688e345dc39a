"""The thread socket: the owner and holders of the view permission subscribe; anyone else is closed with
4403; events are relayed."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from conversations.events import broadcast
from conversations.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


def _communicator(thread, user):
    from channels.auth import AuthMiddlewareStack

    application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
    communicator = WebsocketCommunicator(application, f"/ws/threads/{thread.thread_id}/")
    communicator.scope["user"] = user
    return communicator


async def _connect(thread, user):
    communicator = _communicator(thread, user)
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def test_another_user_is_closed_with_4403(thread, other_user):
    communicator = await _connect(thread, other_user)
    assert await communicator.receive_output(timeout=2) == {"type": "websocket.close", "code": 4403}
    await communicator.wait()


async def test_anonymous_is_closed_with_4403(thread):
    from django.contrib.auth.models import AnonymousUser

    communicator = await _connect(thread, AnonymousUser())
    assert (await communicator.receive_output(timeout=2))["code"] == 4403


async def test_owner_receives_run_events_as_json(thread, user):
    from conversations.services import message_intake

    communicator = await _connect(thread, user)
    await sync_to_async(message_intake)(thread_id=thread.thread_id, user=user, content="hello")
    received = []
    while not (received and received[-1].get("status") == "succeeded"):
        received.append(await communicator.receive_json_from(timeout=5))
    types = [event["type"] for event in received]
    assert types[:2] == ["message.created", "run.status"]
    assert {"run.token", "message.created"} <= set(types)
    assert received[-1]["type"] == "run.status"
    await communicator.disconnect()


async def test_a_holder_of_the_view_permission_watches_any_thread_and_gets_its_events(thread, staff_user):
    from django.contrib.auth.models import Permission

    await sync_to_async(staff_user.user_permissions.add)(
        await sync_to_async(Permission.objects.get)(codename="view_conversation")
    )
    communicator = await _connect(thread, staff_user)
    await sync_to_async(broadcast)(
        thread.thread_id,
        "compression",
        status="started",
        level="compaction",
        before_tokens=10,
        after_tokens=10,
    )
    await sync_to_async(broadcast)(thread.thread_id, "state", token_usage={"summary_pressure_ratio": 0.5})
    assert await communicator.receive_json_from(timeout=2) == {
        "type": "compression",
        "status": "started",
        "level": "compaction",
        "before_tokens": 10,
        "after_tokens": 10,
    }
    assert (await communicator.receive_json_from(timeout=2))["token_usage"] == {"summary_pressure_ratio": 0.5}
    await communicator.disconnect()


async def test_an_agent_event_reaches_every_open_thread_of_that_agent_only(thread, user, other_user, agent):
    from agent_platform.models import Agent
    from conversations.events import broadcast_agent
    from conversations.services import thread_create

    second_agent = await sync_to_async(Agent.objects.create)(name="Other", slug="other-agent")
    other_thread = await sync_to_async(thread_create)(user=user, agent_slug=second_agent.slug)
    same_agent = await _connect(thread, user)
    different_agent = await _connect(other_thread, user)
    await sync_to_async(broadcast_agent)(agent.pk, "state", reason="agent_retuned")
    assert await same_agent.receive_json_from(timeout=2) == {"type": "state", "reason": "agent_retuned"}
    assert await different_agent.receive_nothing(timeout=0.3)
    await same_agent.disconnect()
    await different_agent.disconnect()
