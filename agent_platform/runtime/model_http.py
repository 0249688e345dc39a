"""The HTTP transport of model calls, which Stop closes: a call made inside a run whose stop check says
so ends within ``STOP_POLL_SECONDS``, whether it waits for the first byte (a reasoning model's silent
phase) or streams, and its connection is closed, so the provider stops working on an answer nobody
reads.

A call inside a run (the run config carries its stop check, ``STOP_CHECK_CONFIG_KEY``) is made on an
event loop of its own thread, as an asyncio task the calling thread watches: Stop cancels the task, and
task cancellation closes the request, the connection with it. A call outside a run (a model list, the
admin) goes through the plain transport.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import httpx

from context_engine.middleware.run_config import configured_stop

__all__ = ["STOP_POLL_SECONDS", "ModelCallStopped", "StoppableTransport"]

# How often a waiting call asks the run's stop check (the check itself reads the cache at most every
# 50 ms): Stop ends the call within this and a check.
STOP_POLL_SECONDS = 0.1
# Closing a cancelled response waits this long for its connection to be released.
CLOSE_SECONDS = 2.0

T = TypeVar("T")


class ModelCallStopped(Exception):
    """The user stopped the run while this model call was waiting or streaming; its request was closed.

    Not an ``httpx.RequestError``: the OpenAI client must not retry a call the user ended."""


class _Loop:
    """One event loop per process, in a daemon thread, with its own async transport (pooled
    connections). Made again in a forked child (a Celery worker), whose parent's thread is gone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._transport: httpx.AsyncHTTPTransport | None = None

    def get(self) -> tuple[asyncio.AbstractEventLoop, httpx.AsyncHTTPTransport]:
        with self._lock:
            if self._loop is None or self._transport is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="model-http", daemon=True).start()
                self._loop, self._transport, self._pid = loop, httpx.AsyncHTTPTransport(), os.getpid()
            return self._loop, self._transport


_LOOP = _Loop()


def _watched(
    coroutine: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop, stopped: Callable[[], bool]
) -> T:
    """``coroutine``'s result, run on ``loop``; once ``stopped()`` says so, its task is cancelled (the
    request closed) and ``ModelCallStopped`` raised."""
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    while True:
        try:
            return future.result(timeout=STOP_POLL_SECONDS)
        except concurrent.futures.TimeoutError:
            if stopped():
                future.cancel()
                raise ModelCallStopped() from None


class _StoppableStream(httpx.SyncByteStream):
    """A response body read chunk by chunk from the loop, each wait watched by the stop check."""

    def __init__(
        self, stream: httpx.AsyncByteStream, loop: asyncio.AbstractEventLoop, stopped: Callable[[], bool]
    ) -> None:
        self._stream, self._loop, self._stopped = stream, loop, stopped

    def __iter__(self) -> Iterator[bytes]:
        chunks = aiter(self._stream)

        async def following() -> bytes:
            return await anext(chunks)

        while True:
            try:
                yield _watched(following(), self._loop, self._stopped)
            except StopAsyncIteration:
                return
            except ModelCallStopped:
                self.close()
                raise

    def close(self) -> None:
        future = asyncio.run_coroutine_threadsafe(self._stream.aclose(), self._loop)
        try:
            future.result(timeout=CLOSE_SECONDS)
        except (concurrent.futures.TimeoutError, httpx.HTTPError, OSError):
            future.cancel()  # a connection that will not close cleanly is dropped


class StoppableTransport(httpx.BaseTransport):
    """``httpx.HTTPTransport`` for model calls, closed by Stop (see the module docstring)."""

    def __init__(self) -> None:
        self._direct = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        stopped = configured_stop()
        if stopped is None:
            return self._direct.handle_request(request)
        if stopped():
            raise ModelCallStopped()
        loop, transport = _LOOP.get()
        request.read()  # the body as bytes, readable from the loop
        response = _watched(transport.handle_async_request(request), loop, stopped)
        if not isinstance(response.stream, httpx.AsyncByteStream):  # pragma: no cover - httpx's contract
            raise TypeError("an async transport answered with a sync stream")
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_StoppableStream(response.stream, loop, stopped),
            extensions=response.extensions,
            request=request,
        )

    def close(self) -> None:
        self._direct.close()
