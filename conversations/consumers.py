"""The thread WebSocket: live events of one thread, for whoever may see it (``conversations.access``).

Access is decided at connect and again before relaying events, at most every
``SOCKET_ACCESS_RECHECK_SECONDS`` (a revoked permission, a deactivated user or an expired session
closes the socket with 4403); a logout closes the sockets of that session at once (4401).
"""

from __future__ import annotations

import time
import uuid

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from conversations.access import thread_visible, thread_visible_now
from conversations.events import agent_group, thread_group, user_group
from conversations.selectors import thread_agent_id

LOGGED_OUT_CLOSE_CODE = 4401
_clock = time.monotonic  # the recheck period's clock (tests move it)
FORBIDDEN_CLOSE_CODE = 4403
NOT_FOUND_CLOSE_CODE = 4404
BAD_FRAME_CLOSE_CODE = 4400


class ThreadConsumer(AsyncJsonWebsocketConsumer):
    """Joins the thread's group, its agent's group (a retuned budget changes every open meter) and its
    user's group (a logout closes that session's sockets)."""

    groups_joined: tuple[str, ...] = ()
    thread_id: uuid.UUID | None = None
    checked_at: float = 0.0  # time.monotonic() of the last access decision
    ended: bool = False  # closed by us: events still in flight are dropped

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
        self.thread_id = thread_id
        self.checked_at = _clock()
        user_id = self.scope["user"].pk
        self.groups_joined = (thread_group(thread_id), agent_group(agent_id), user_group(user_id))
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
        if self.ended or not await self._still_allowed():
            return
        await self.send_json(message["event"])

    async def session_ended(self, message: dict) -> None:
        """A session of this user logged out: close if it is this socket's (or the socket has none)."""
        session = self.scope.get("session")
        own = session.session_key if session is not None else None
        if own is None or own == message.get("session_key"):
            await self._end(LOGGED_OUT_CLOSE_CODE)

    async def _still_allowed(self) -> bool:
        """The access rule again, read afresh once the last decision is older than the setting (one
        query per socket per period, however many events arrive); a refusal closes with 4403."""
        now = _clock()
        if now - self.checked_at < settings.SOCKET_ACCESS_RECHECK_SECONDS:
            return True
        session = self.scope.get("session")
        allowed = await database_sync_to_async(thread_visible_now)(
            thread_id=self.thread_id,
            user_id=self.scope["user"].pk,
            session_key=session.session_key if session is not None else None,
        )
        if not allowed:
            await self._end(FORBIDDEN_CLOSE_CODE)
            return False
        self.checked_at = now
        return True

    async def _end(self, code: int) -> None:
        self.ended = True
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)
        self.groups_joined = ()
        await self.close(code=code)


class NoRouteConsumer(AsyncJsonWebsocketConsumer):
    """Any other socket path: closed with 4404, where the router would raise (a traceback per probe)."""

    async def connect(self) -> None:
        await _refuse(self, NOT_FOUND_CLOSE_CODE)


async def _refuse(consumer: AsyncJsonWebsocketConsumer, code: int) -> None:
    # Accept, then close with the code: a browser sees it, where a refused handshake is only "1006".
    await consumer.accept()
    await consumer.close(code=code)
