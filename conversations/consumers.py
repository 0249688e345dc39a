"""The thread WebSocket: live events of one thread, for its owner and staff."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from conversations.events import thread_group
from conversations.selectors import thread_can_subscribe

FORBIDDEN_CLOSE_CODE = 4403


class ThreadConsumer(AsyncJsonWebsocketConsumer):
    group_name: str | None = None

    async def connect(self) -> None:
        thread_id = self.scope["url_route"]["kwargs"]["thread_id"]
        allowed = await database_sync_to_async(thread_can_subscribe)(
            thread_id=thread_id, user=self.scope.get("user")
        )
        # Accept, then close with 4403: a browser sees the code, where a refused handshake is only "1006".
        await self.accept()
        if not allowed:
            await self.close(code=FORBIDDEN_CLOSE_CODE)
            return
        self.group_name = thread_group(thread_id)
        await self.channel_layer.group_add(self.group_name, self.channel_name)

    async def disconnect(self, code: int) -> None:
        if self.group_name:
            await self.channel_layer.group_discard(self.group_name, self.channel_name)

    async def receive_json(self, content, **kwargs) -> None:
        """The socket is server-to-client only; what the client sends is ignored."""

    async def thread_event(self, message: dict) -> None:
        await self.send_json(message["event"])
