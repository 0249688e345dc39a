"""The thread WebSocket: live events of one thread, for whoever may see it (``conversations.access``)."""

from __future__ import annotations

import uuid

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from conversations.access import thread_visible
from conversations.events import agent_group, thread_group
from conversations.selectors import thread_agent_id

FORBIDDEN_CLOSE_CODE = 4403
NOT_FOUND_CLOSE_CODE = 4404
BAD_FRAME_CLOSE_CODE = 4400


class ThreadConsumer(AsyncJsonWebsocketConsumer):
    """Joins the thread's group and its agent's group (a retuned budget changes every open meter)."""

    groups_joined: tuple[str, ...] = ()

    async def connect(self) -> None:
        try:
            thread_id = uuid.UUID(self.scope["url_route"]["kwargs"]["thread_id"])
        except ValueError:
            await _refuse(self, NOT_FOUND_CLOSE_CODE)
            return
        allowed = await database_sync_to_async(thread_visible)(
            thread_id=thread_id, user=self.scope.get("user")
        )
        if not allowed:
            await _refuse(self, FORBIDDEN_CLOSE_CODE)
            return
        # Join before accepting: an event sent once the client sees the socket open is never missed.
        agent_id = await database_sync_to_async(thread_agent_id)(thread_id=thread_id)
        self.groups_joined = (thread_group(thread_id), agent_group(agent_id))
        for group in self.groups_joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs) -> None:
        """The socket is server-to-client only: JSON the client sends is ignored; anything else (binary,
        not JSON) closes it with 4400, where decoding it would end in 1011 and a logged traceback."""
        try:
            await super().receive(text_data=text_data, bytes_data=bytes_data, **kwargs)
        except ValueError:  # json.JSONDecodeError, or "No text section" for a binary frame
            await self.close(code=BAD_FRAME_CLOSE_CODE)

    async def receive_json(self, content, **kwargs) -> None:
        """What the client sends as JSON is ignored."""

    async def thread_event(self, message: dict) -> None:
        await self.send_json(message["event"])


class NoRouteConsumer(AsyncJsonWebsocketConsumer):
    """Any other socket path: closed with 4404, where the router would raise (a traceback per probe)."""

    async def connect(self) -> None:
        await _refuse(self, NOT_FOUND_CLOSE_CODE)


async def _refuse(consumer: AsyncJsonWebsocketConsumer, code: int) -> None:
    # Accept, then close with the code: a browser sees it, where a refused handshake is only "1006".
    await consumer.accept()
    await consumer.close(code=code)
