"""ASGI: no error answer leaves without a body. Django answers some malformed requests before any view
or middleware runs, with an empty 400 (a query string that is not UTF-8, for one: its ASGI handler
builds the request inside ``create_request``); such an answer gets ``{"code", "message"}`` here,
whatever the path, so a client always reads why."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

Message = dict[str, Any]
Send = Callable[[Message], Awaitable[None]]


def error_body(status: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    code = "bad_request" if status == 400 else phrase.lower().replace(" ", "_").replace("-", "_")
    return json.dumps({"code": code, "message": f"{phrase}: the request could not be read."}).encode()


class ErrorBodies:
    """Wraps an HTTP ASGI application: an error start (4xx, 5xx) is held until its first body message;
    an empty, final one is replaced by a JSON body (and its headers by ones that say so)."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[[], Awaitable[Message]], send: Send
    ) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        held: Message | None = None

        async def relay(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and message["status"] >= 400:
                held = message
                return
            if held is not None and message["type"] == "http.response.body":
                start, held = held, None
                if not message.get("body") and not message.get("more_body", False):
                    body = error_body(start["status"])
                    headers = [
                        (name, value)
                        for name, value in start.get("headers", [])
                        if name.lower() not in (b"content-type", b"content-length")
                    ]
                    headers += [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                    ]
                    await send({**start, "headers": headers})
                    await send({**message, "body": body})
                    return
                await send(start)
            await send(message)

        return await self.app(scope, receive, relay)
