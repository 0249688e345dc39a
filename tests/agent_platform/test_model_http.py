"""Stop closes a model call's HTTP request: while it waits for the first byte and while it streams, the
call ends within the poll and the server sees its connection closed; outside a run nothing changes."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

import httpx
import pytest
from langchain_core.runnables.config import var_child_runnable_config

from agent_platform.runtime.model_http import ModelCallStopped, StoppableTransport
from context_engine.state import STOP_CHECK_CONFIG_KEY

STOP_WITHIN = 0.5


class _SilentServer:
    """Accepts one connection, reads the request, sends ``head`` (maybe nothing), then waits until the
    client closes; ``closed_at`` is when it saw the connection end."""

    def __init__(self, head: bytes = b"") -> None:
        self.head = head
        self.closed_at: float | None = None
        self.closed = threading.Event()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}/v1/chat/completions"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self._server.accept()
        conn.recv(65536)
        if self.head:
            conn.sendall(self.head)
        conn.settimeout(30)
        while conn.recv(65536):  # b"": the client closed the connection
            pass
        self.closed_at = time.monotonic()
        self.closed.set()
        conn.close()
        self._server.close()


@contextmanager
def _in_a_run(stopped):
    token = var_child_runnable_config.set({"configurable": {STOP_CHECK_CONFIG_KEY: stopped}})
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def _stop_after(seconds: float, flag: dict) -> None:
    def press() -> None:
        time.sleep(seconds)
        flag["at"] = time.monotonic()

    threading.Thread(target=press, daemon=True).start()


def test_stop_closes_a_call_still_waiting_for_its_first_byte():
    server, flag = _SilentServer(), {}
    client = httpx.Client(transport=StoppableTransport(), timeout=30)
    _stop_after(0.3, flag)
    with _in_a_run(lambda: "at" in flag), pytest.raises(ModelCallStopped):
        client.post(server.url, json={"stream": False})
    ended = time.monotonic()
    assert ended - flag["at"] < STOP_WITHIN
    assert server.closed.wait(1.0), "the request was abandoned, not closed"
    assert server.closed_at - flag["at"] < 1.0


def test_stop_closes_a_call_whose_stream_went_silent():
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    first = b'data: {"choices": []}\n\n'
    server, flag = _SilentServer(head + f"{len(first):x}\r\n".encode() + first + b"\r\n"), {}
    client = httpx.Client(transport=StoppableTransport(), timeout=30)
    received = []
    with _in_a_run(lambda: "at" in flag):
        with client.stream("POST", server.url, json={"stream": True}) as response:
            assert response.status_code == 200
            with pytest.raises(ModelCallStopped):
                for chunk in response.iter_raw():
                    received.append(chunk)
                    _stop_after(0.3, flag)
    assert received == [first]
    assert time.monotonic() - flag["at"] < STOP_WITHIN
    assert server.closed.wait(1.0), "the stream was abandoned, not closed"


def test_a_call_outside_a_run_and_an_unstopped_run_are_answered_as_usual():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve(times: int) -> None:
        for _ in range(times):
            conn, _ = server.accept()
            conn.recv(65536)
            conn.sendall(b'HTTP/1.1 200 OK\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{"ok":true}')
            conn.close()

    threading.Thread(target=serve, args=(2,), daemon=True).start()
    client = httpx.Client(transport=StoppableTransport(), timeout=10)
    assert client.get(f"http://127.0.0.1:{port}/").json() == {"ok": True}
    with _in_a_run(lambda: False):
        assert client.get(f"http://127.0.0.1:{port}/").json() == {"ok": True}
    server.close()


def test_a_run_stopped_before_the_call_sends_nothing():
    sent = []
    client = httpx.Client(transport=StoppableTransport(), timeout=10)
    with _in_a_run(lambda: True), pytest.raises(ModelCallStopped):
        client.post("http://127.0.0.1:9/never", content=b"x", extensions={"trace": lambda *a: sent.append(a)})
    assert sent == []
