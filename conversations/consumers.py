"""The thread WebSocket: live events of one thread, for its owner and staff."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from conversations.events import agent_group, thread_group
from conversations.selectors import thread_agent_id, thread_can_subscribe

FORBIDDEN_CLOSE_CODE = 4403


class ThreadConsumer(AsyncJsonWebsocketConsumer):
    """Joins the thread's group and its agent's group (a retuned budget changes every open meter)."""

    groups_joined: tuple[str, ...] = ()

    async def connect(self) -> None:
        thread_id = self.scope["url_route"]["kwargs"]["thread_id"]
        allowed = await database_sync_to_async(thread_can_subscribe)(
            thread_id=thread_id, user=self.scope.get("user")
        )
        if allowed:
            # Join before accepting: an event sent once the client sees the socket open is never missed.
            agent_id = await database_sync_to_async(thread_agent_id)(thread_id=thread_id)
            self.groups_joined = (thread_group(thread_id), agent_group(agent_id))
            for group in self.groups_joined:
                await self.channel_layer.group_add(group, self.channel_name)
        # Accept, then close with 4403: a browser sees the code, where a refused handshake is only "1006".
        await self.accept()
        if not allowed:
            await self.close(code=FORBIDDEN_CLOSE_CODE)

    async def disconnect(self, code: int) -> None:
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive_json(self, content, **kwargs) -> None:
        """The socket is server-to-client only; what the client sends is ignored."""

    async def thread_event(self, message: dict) -> None:
        await self.send_json(message["event"])
