"""One long-lived publisher of live events per process: an event loop in a daemon thread sends every
event, in order, over the channel layer's own pooled connections.

``async_to_sync(layer.group_send)`` from a run's thread runs each send on a fresh event loop, and
channels_redis keeps its connection pools per loop: every event opened a new Redis connection and the
run waited for the round trip. Here the run hands the event over and goes on; one loop (so one pool)
per process sends them one at a time, so a thread's events keep their order. A live event is a
notice, not state: one lost with its process is what a page's reload recovers.

When Redis does not answer, an event is tried again (with back-off) until ``LIVE_EVENT_RETRY_SECONDS``
after it was published, the ones behind it waiting (their order kept); past that it is dropped and
counted (``agent_platform_live_events_dropped``), as is any published while ``LIVE_EVENT_BUFFER`` wait.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import Any

from django.conf import settings

from agent_platform.observability.metrics import live_event_dropped

logger = logging.getLogger(__name__)


RETRY_FIRST_SECONDS = 0.1
RETRY_MAX_SECONDS = 2.0


class Publisher:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue | None = None
        self._pid: int | None = None

    def publish(self, layer: Any, group: str, message: dict[str, Any]) -> None:
        """Queue ``message`` for ``group``; returns at once."""
        loop, queue = self._started()
        deadline = time.monotonic() + settings.LIVE_EVENT_RETRY_SECONDS
        loop.call_soon_threadsafe(_enqueue, queue, (layer, group, message, deadline))

    def _started(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Queue]:
        with self._lock:
            # A forked child (a Celery pool process) inherits the object, not the thread: start anew.
            if self._loop is None or self._queue is None or self._pid != os.getpid():
                self._loop, self._queue = self._start()
                self._pid = os.getpid()
            return self._loop, self._queue

    def _start(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Queue]:
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        holder: dict[str, asyncio.Queue] = {}

        def run() -> None:
            asyncio.set_event_loop(loop)
            holder["queue"] = asyncio.Queue(maxsize=max(1, settings.LIVE_EVENT_BUFFER))
            loop.create_task(_drain(holder["queue"]))
            ready.set()
            loop.run_forever()

        threading.Thread(target=run, name="live-events", daemon=True).start()
        ready.wait()
        return loop, holder["queue"]


def _enqueue(queue: asyncio.Queue, item: tuple[Any, str, dict[str, Any], float]) -> None:
    try:
        queue.put_nowait(item)
    except asyncio.QueueFull:
        live_event_dropped(reason="buffer_full")
        logger.warning("Dropped a %s event to %s: %s events wait", _kind(item[2]), item[1], queue.qsize())


async def _drain(queue: asyncio.Queue) -> None:
    while True:
        layer, group, message, deadline = await queue.get()
        await _send(layer, group, message, deadline=deadline)


async def _send(layer: Any, group: str, message: dict[str, Any], *, deadline: float) -> bool:
    """Send one event, trying again with back-off until ``deadline``; whether it was sent."""
    pause = RETRY_FIRST_SECONDS
    while True:
        try:
            await layer.group_send(group, message)
            return True
        except Exception as exc:  # noqa: BLE001 - a lost live event must never stop the ones after it
            if time.monotonic() + pause > deadline:
                live_event_dropped(reason="unreachable")
                logger.warning("Dropped a %s event to %s: %r", _kind(message), group, exc)
                return False
        await asyncio.sleep(pause)
        pause = min(pause * 2, RETRY_MAX_SECONDS)


def _kind(message: dict[str, Any]) -> Any:
    return (message.get("event") or {}).get("type")


def pooled(layer: Any) -> bool:
    """Layers whose connections live per event loop (channels_redis): those the publisher serves. The
    in-memory layer (one process, tests) keeps being sent to directly."""
    return type(layer).__module__.startswith("channels_redis.")


publisher = Publisher()
