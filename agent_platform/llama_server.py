"""``python -m agent_platform.llama_server [llama_cpp.server arguments]``: llama-cpp-python's
OpenAI-compatible server, plus the one part of the protocol it lacks (0.3.36): ``stream_options:
{"include_usage": true}``. The platform streams every reply and calibrates its token estimates from the
usage chunk a stream ends with (as OpenAI, vLLM and llama.cpp's own C++ server send it); without it a
local model would never calibrate.

For such a request the server is first asked the same question without streaming and with
``max_tokens=1``: its answer carries the prompt tokens by the server's own tokenizer and chat template,
and llama.cpp keeps that prompt's evaluated state, so the real, streamed request reuses it. The stream
is then relayed unchanged, its content chunks counted (one per generated token), and a usage chunk is
sent before ``[DONE]``. Any error of the probe (an over-long request's 400 ``context_length_exceeded``)
is the answer, as the server would have given it.

Runs only where the ``local-model`` extra is installed (``local_model.start_server`` starts it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CHAT_PATH = "/v1/chat/completions"
DONE = b"data: [DONE]"


async def _read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def _replay(body: bytes, then: Receive | None = None) -> Receive:
    """``body`` as the request, then what ``then`` receives (the client's disconnect); with no ``then``
    (a request of our own) nothing more arrives: the server never sees a disconnect it would stop for."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            if then is None:
                await asyncio.Event().wait()
            return await then()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _with_body(scope: Scope, body: bytes) -> Scope:
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
    return {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}


def _normalized(request: dict[str, Any], *, n_predict: int | None) -> bool:
    """Fill in what the server's request schema lacks, in place; returns whether anything changed:
    ``max_tokens`` from ``n_predict``, and ``""`` for an assistant message's ``null`` content (OpenAI sends
    and accepts ``null`` beside tool calls; this server's schema refuses it with a 500)."""
    changed = False
    if n_predict and not request.get("max_tokens"):
        request["max_tokens"] = n_predict
        changed = True
    for message in request.get("messages") or ():
        if (
            isinstance(message, dict)
            and message.get("role") == "assistant"
            and message.get("content") is None
        ):
            message["content"] = ""
            changed = True
    return changed


class StreamUsage:
    """ASGI middleware adding the usage chunk to streamed chat completions that ask for it, giving a
    request that names no ``max_tokens`` the operator's ``n_predict`` (llama.cpp's own server option:
    without it a small model may ramble to the end of its window), and accepting ``null`` assistant
    content (``_normalized``)."""

    def __init__(self, app: ASGIApp, *, n_predict: int | None = None) -> None:
        self.app = app
        self.n_predict = n_predict

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != CHAT_PATH:
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        try:
            request = json.loads(body)
            if isinstance(request, dict) and _normalized(request, n_predict=self.n_predict):
                body = json.dumps(request).encode()
                scope = _with_body(scope, body)
            wanted = bool(request.get("stream")) and bool(
                (request.get("stream_options") or {}).get("include_usage")
            )
        except (ValueError, AttributeError):
            wanted = False
        if not wanted:
            await self.app(scope, _replay(body, receive), send)
            return
        probe = {k: v for k, v in request.items() if k != "stream_options"} | {
            "stream": False,
            "max_tokens": 1,
        }
        probe_body = json.dumps(probe).encode()
        status, headers, answer = await self._call(_with_body(scope, probe_body), probe_body)
        if status != 200:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": answer})
            return
        prompt_tokens = int(json.loads(answer)["usage"]["prompt_tokens"])
        await self._relay(
            scope, _replay(body, receive), send, prompt_tokens=prompt_tokens, model=request.get("model", "")
        )

    async def _call(self, scope: Scope, body: bytes) -> tuple[int, list, bytes]:
        status, headers, chunks = 500, [], []

        async def collect(message: Message) -> None:
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status, headers = message["status"], message.get("headers", [])
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, _replay(body), collect)
        return status, headers, b"".join(chunks)

    async def _relay(
        self, scope: Scope, receive: Receive, send: Send, *, prompt_tokens: int, model: str
    ) -> None:
        completion_tokens = 0
        pending = b""

        async def relay(message: Message) -> None:
            nonlocal completion_tokens, pending
            if message["type"] != "http.response.body":
                await send(message)
                return
            pending += message.get("body", b"")
            events = pending.replace(b"\r\n", b"\n").split(b"\n\n")
            pending = events.pop()  # an incomplete event waits for the rest
            out = b""
            for event in events:
                if event.strip() == DONE:
                    usage = {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    }
                    chunk = {
                        "id": f"chatcmpl-usage-{time.time_ns()}",
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [],
                        "usage": usage,
                    }
                    out += b"data: " + json.dumps(chunk).encode() + b"\n\n"
                elif event.startswith(b"data: "):
                    try:
                        choices = json.loads(event[len(b"data: ") :]).get("choices") or []
                    except ValueError:
                        choices = []
                    completion_tokens += sum(1 for c in choices if (c.get("delta") or {}).get("content"))
                out += event + b"\n\n"
            if out or not message.get("more_body", False):
                await send({**message, "body": out + (b"" if message.get("more_body", False) else pending)})

        await self.app(scope, receive, relay)


def main() -> None:
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_args_from_model(parser, Settings)
    parser.add_argument("--n_predict", type=int, default=None, help="max_tokens of a request that names none")
    parser.add_argument(
        "--fd", type=int, default=None, help="serve on this listening socket (held by the parent)"
    )
    args = parser.parse_args()
    n_predict = args.__dict__.pop("n_predict")
    fd = args.__dict__.pop("fd")
    server_settings = parse_model_from_args(ServerSettings, args)
    app = create_app(
        server_settings=server_settings, model_settings=[parse_model_from_args(ModelSettings, args)]
    )
    if fd is not None:  # the port was bound by the parent and never released: serve on its socket
        uvicorn.run(StreamUsage(app, n_predict=n_predict), fd=fd, log_level="warning")
        return
    uvicorn.run(
        StreamUsage(app, n_predict=n_predict),
        host=server_settings.host,
        port=server_settings.port,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
