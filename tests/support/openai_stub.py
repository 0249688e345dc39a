"""A local OpenAI-protocol stub server: ``POST /v1/chat/completions`` from a scripted queue, and
``GET /v1/models`` listing ``models`` (or answering ``models_error``: a status and a JSON body).

Usage reports ``prompt_tokens_details.cached_tokens`` as a caching provider would (OpenAI): the longest
prefix (tools, then messages, as sent) shared with the previous request of the same thread (its
``prompt_cache_key``, else the stub's one thread), in whole 128-token blocks once it reaches 1,024.

Each scripted reply is served as a JSON completion, or as SSE chunks when the request has
``"stream": true`` (with a final usage chunk when ``stream_options.include_usage`` is set); errors are
served with any status and JSON body. Every request body, and the bearer key it came with, is recorded
for assertions.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CACHE_MIN_TOKENS = 1024  # OpenAI: no cache hit below this prompt prefix
CACHE_BLOCK_TOKENS = 128  # ... and hits in whole blocks of this many tokens


@dataclass
class ScriptedReply:
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"id", "name", "arguments"(dict)}]
    usage: dict[str, int] | None = None
    error_status: int | None = None
    error_body: dict[str, Any] | None = None
    redirect_to: str | None = None  # answer 307 with this Location (a redirect elsewhere)
    delay: float = 0.0  # seconds to wait before answering (a slow model; a worker killed meanwhile)
    word_delay: float = 0.0  # seconds between streamed words (a slow model, for Stop)


class OpenAIStub:
    def __init__(
        self, model: str = "gpt-4o-mini", *, prompt_tokens: Callable[[dict[str, Any]], int] | None = None
    ) -> None:
        self.model = model
        self.prompt_tokens = prompt_tokens  # counts a request's prompt tokens (default: JSON chars / 4)
        # Answers a request from its body when nothing is scripted (a model that writes its own replies).
        self.responder: Callable[[dict[str, Any]], ScriptedReply] | None = None
        self.queue: deque[ScriptedReply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []  # the Authorization header of every request, in order
        self.models: list[str] = [model]  # what GET /v1/models lists
        self.models_error: tuple[int, dict[str, Any]] | None = None  # else: that status and body
        self.previous_prompts: dict[str, str] = {}  # the latest request's prompt text, per thread
        self.cached_reported: list[int] = []  # the cached_tokens every completed request reported
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="openai-stub", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> OpenAIStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- scripting ------------------------------------------------------------------------------

    def reply(
        self,
        content: str,
        *,
        usage: dict[str, int] | None = None,
        delay: float = 0.0,
        word_delay: float = 0.0,
    ) -> OpenAIStub:
        self.queue.append(ScriptedReply(content=content, usage=usage, delay=delay, word_delay=word_delay))
        return self

    def tool_call(
        self, name: str, arguments: dict[str, Any], *, call_id: str | None = None, content: str = ""
    ) -> OpenAIStub:
        call = {"id": call_id or f"call_{len(self.queue)}_{name}", "name": name, "arguments": arguments}
        self.queue.append(ScriptedReply(content=content, tool_calls=[call]))
        return self

    def error(self, status: int, body: dict[str, Any]) -> OpenAIStub:
        self.queue.append(ScriptedReply(error_status=status, error_body=body))
        return self

    def redirect(self, location: str) -> OpenAIStub:
        """Answer the next request with ``307 Temporary Redirect`` to ``location``."""
        self.queue.append(ScriptedReply(redirect_to=location))
        return self

    def context_overflow(
        self, message: str = "This model's maximum context length is 8192 tokens."
    ) -> OpenAIStub:
        return self.error(
            400,
            {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        )

    def _next(self, body: dict[str, Any]) -> ScriptedReply:
        with self._lock:
            self.requests.append(body)
            if not self.queue and self.responder is not None:
                return self.responder(body)
            if not self.queue:
                return ScriptedReply(
                    error_status=500,
                    error_body={"error": {"message": "openai stub: no scripted reply left", "type": "stub"}},
                )
            return self.queue.popleft()


def cached_tokens(*, prompt_tokens: int, prompt_text: str, previous_text: str | None) -> int:
    """What a caching provider serves from its cache: the prefix shared with the thread's previous
    request, as a share of ``prompt_tokens``, in whole 128-token blocks from 1,024 tokens on."""
    if not previous_text or not prompt_text:
        return 0
    shared = len(os.path.commonprefix([prompt_text, previous_text]))
    prefix = prompt_tokens * shared // len(prompt_text)
    if prefix < CACHE_MIN_TOKENS:
        return 0
    return min(prefix // CACHE_BLOCK_TOKENS * CACHE_BLOCK_TOKENS, prompt_tokens)


def _prompt_text(body: dict[str, Any]) -> str:
    return json.dumps([body.get("tools") or [], body.get("messages") or []], ensure_ascii=False)


def _usage(stub: OpenAIStub, reply: ScriptedReply, body: dict[str, Any]) -> dict[str, Any]:
    if reply.usage:
        return reply.usage
    if stub.prompt_tokens is not None:
        prompt = stub.prompt_tokens(body)
    else:
        prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
    text, thread = _prompt_text(body), str(body.get("prompt_cache_key") or "")
    with stub._lock:
        cached = cached_tokens(
            prompt_tokens=prompt, prompt_text=text, previous_text=stub.previous_prompts.get(thread)
        )
        stub.previous_prompts[thread] = text
        stub.cached_reported.append(cached)
    completion = max(1, len(reply.content) // 4 + 5 * len(reply.tool_calls))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _tool_calls(reply: ScriptedReply) -> list[dict[str, Any]]:
    return [
        {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
        }
        for call in reply.tool_calls
    ]


class _StubHandler(BaseHTTPRequestHandler):
    """The stub's HTTP side; ``stub`` is set on the subclass ``_handler_for`` makes per server."""

    protocol_version = "HTTP/1.1"
    stub: OpenAIStub

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.stub.authorizations.append(self.headers.get("Authorization", ""))
        if self.path.rstrip("/") != "/v1/models":
            self._json(404, {"error": {"message": f"stub has no {self.path}", "type": "not_found"}})
        elif self.stub.models_error is not None:
            self._json(*self.stub.models_error)
        else:
            data = [
                {"id": name, "object": "model", "created": 0, "owned_by": "stub"} for name in self.stub.models
            ]
            self._json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        self.stub.authorizations.append(self.headers.get("Authorization", ""))
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"stub has no {self.path}", "type": "not_found"}})
            return
        reply = self.stub._next(body)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.redirect_to is not None:
            self.send_response(307)
            self.send_header("Location", reply.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif reply.error_status is not None:
            self._json(reply.error_status, reply.error_body or {})
        elif body.get("stream"):
            self._stream(reply, body)
        else:
            self._complete(reply, body)

    def _base(self) -> dict[str, Any]:
        return {"id": f"chatcmpl-{time.time_ns()}", "created": int(time.time()), "model": self.stub.model}

    def _complete(self, reply: ScriptedReply, body: dict[str, Any]) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.tool_calls:
            message["tool_calls"] = _tool_calls(reply)
        finish = "tool_calls" if reply.tool_calls else "stop"
        self._json(
            200,
            {
                **self._base(),
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": _usage(self.stub, reply, body),
            },
        )

    def _stream(self, reply: ScriptedReply, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        base = {**self._base(), "object": "chat.completion.chunk"}

        def emit(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> None:
            choices = [{"index": 0, "delta": delta, "finish_reason": finish}] if delta is not None else []
            chunk = {**base, "choices": choices, **extra}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()

        emit({"role": "assistant", "content": ""})
        words = reply.content.split(" ") if reply.content else []
        for index, word in enumerate(words):
            emit({"content": word + (" " if index < len(words) - 1 else "")})
            time.sleep(reply.word_delay)
        for index, call in enumerate(_tool_calls(reply)):
            emit({"tool_calls": [{"index": index, **call}]})
        emit({}, "tool_calls" if reply.tool_calls else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            emit(None, usage=_usage(self.stub, reply, body))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def _handler_for(stub: OpenAIStub) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_StubHandler,), {"stub": stub})
