"""The llama.cpp shim's ASGI layer (``agent_platform.llama_server.StreamUsage``) against a scripted ASGI
app standing in for llama-cpp-python's server: no extra needed, so it runs in every pass.

Invariants: a streamed request that asks for usage gets the server's stream unchanged, event for event,
however the server cuts it into body chunks, plus one usage chunk just before ``[DONE]`` whose
``prompt_tokens`` is the probe's and whose ``completion_tokens`` counts the content deltas; a probe's
error is the answer; anything else reaches the server as sent (bar the two schema fixes)."""

from __future__ import annotations

import asyncio
import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_platform.llama_server import CHAT_PATH, StreamUsage


def _event(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _delta(text: str | None) -> dict:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}


class ScriptedServer:
    """Answers a non-streamed request with ``probe`` (status, JSON) and a streamed one with ``stream``'s
    bytes cut at ``cuts``; records every request body it was sent."""

    def __init__(
        self, *, stream: bytes = b"", cuts: list[int] = (), probe=(200, {"usage": {"prompt_tokens": 7}})
    ):
        self.stream, self.cuts, self.probe = stream, sorted(set(cuts)), probe
        self.requests: list[dict] = []

    async def __call__(self, scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        self.requests.append(request)
        assert dict(scope["headers"])[b"content-length"] == str(len(body)).encode()
        if not request.get("stream"):
            status, answer = self.probe
            await send({"type": "http.response.start", "status": status, "headers": []})
            await send({"type": "http.response.body", "body": json.dumps(answer).encode()})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        edges = [0, *[c for c in self.cuts if 0 < c < len(self.stream)], len(self.stream)]
        for start, end in itertools.pairwise(edges):
            await send({"type": "http.response.body", "body": self.stream[start:end], "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _call(app, request: dict) -> tuple[int, bytes]:
    body = json.dumps(request).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": CHAT_PATH,
        "headers": [(b"content-length", str(len(body)).encode())],
    }
    sent: list[dict] = []
    delivered = False

    async def receive():
        nonlocal delivered
        if delivered:
            await asyncio.Event().wait()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


STREAMED = {
    "model": "smol",
    "stream": True,
    "stream_options": {"include_usage": True},
    "messages": [{"role": "user", "content": "hi"}],
}


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.one_of(st.none(), st.text(min_size=0, max_size=6)), max_size=8),
    crlf=st.booleans(),
    cut_fractions=st.lists(st.floats(min_value=0, max_value=1), max_size=6),
)
def test_a_stream_is_relayed_unchanged_with_one_usage_chunk_before_done(texts, crlf, cut_fractions):
    events = [_event(_delta(text)) for text in texts] + [b"data: [DONE]\n\n"]
    stream = b"".join(events)
    if crlf:
        stream = stream.replace(b"\n", b"\r\n")
    server = ScriptedServer(stream=stream, cuts=[int(f * len(stream)) for f in cut_fractions])
    status, out = _call(StreamUsage(server), STREAMED)

    assert status == 200
    relayed = [e for e in out.split(b"\n\n") if e.strip()]
    original = [e for e in stream.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]
    assert relayed[-1] == b"data: [DONE]"
    assert relayed[:-2] == original[:-1]  # every server event, in order, unchanged
    usage = json.loads(relayed[-2][len(b"data: ") :])["usage"]
    assert usage["prompt_tokens"] == 7
    assert usage["completion_tokens"] == sum(1 for text in texts if text)
    assert usage["total_tokens"] == 7 + usage["completion_tokens"]
    probe, real = server.requests
    assert probe["stream"] is False and probe["max_tokens"] == 1 and "stream_options" not in probe
    assert real == STREAMED


def test_the_probes_error_is_the_answer_and_the_stream_is_never_started():
    refusal = {"error": {"code": "context_length_exceeded", "message": "too long"}}
    server = ScriptedServer(stream=b"data: [DONE]\n\n", probe=(400, refusal))
    status, out = _call(StreamUsage(server), STREAMED)
    assert (status, json.loads(out)) == (400, refusal)
    assert len(server.requests) == 1


def test_a_request_without_include_usage_reaches_the_server_as_sent():
    request = {"model": "smol", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    stream = _event(_delta("a")) + b"data: [DONE]\n\n"
    server = ScriptedServer(stream=stream)
    status, out = _call(StreamUsage(server), request)
    assert (status, out) == (200, stream)
    assert server.requests == [request]


def test_null_assistant_content_and_a_missing_max_tokens_are_filled_in():
    request = {
        "model": "smol",
        "messages": [
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        ],
    }
    server = ScriptedServer()
    _call(StreamUsage(server, n_predict=160), request)
    (sent,) = server.requests
    assert sent["messages"][1]["content"] == "" and sent["max_tokens"] == 160
    server = ScriptedServer()
    _call(StreamUsage(server, n_predict=160), {**request, "max_tokens": 5})
    assert server.requests[0]["max_tokens"] == 5
