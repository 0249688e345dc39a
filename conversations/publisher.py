"""One long-lived publisher of live events per process: an event loop in a daemon thread sends every
event, in order, over the channel layer's own pooled connections.

``async_to_sync(layer.group_send)`` from a run's thread runs each send on a fresh event loop, and
channels_redis keeps its connection pools per loop: every event opened a new Redis connection and the
run waited for the round trip. Here the run hands the event over and goes on; one loop (so one pool)
per process sends them one at a time, so a thread's events keep their order. A live event is a
notice, not state: one lost with its process is what a page's reload recovers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

logger = logging.getLogger(__name__)


class Publisher:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue | None = None
        self._pid: int | None = None

    def publish(self, layer: Any, group: str, message: dict[str, Any]) -> None:
        """Queue ``message`` for ``group``; returns at once."""
        loop, queue = self._started()
        loop.call_soon_threadsafe(queue.put_nowait, (layer, group, message))

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
            holder["queue"] = asyncio.Queue()
            loop.create_task(_drain(holder["queue"]))
            ready.set()
            loop.run_forever()

        threading.Thread(target=run, name="live-events", daemon=True).start()
        ready.wait()
        return loop, holder["queue"]


async def _drain(queue: asyncio.Queue) -> None:
    while True:
        layer, group, message = await queue.get()
        try:
            await layer.group_send(group, message)
        except Exception:  # noqa: BLE001 - a lost live event must never stop the ones after it
            logger.exception("Could not broadcast a %s event to %s", message["event"].get("type"), group)


def pooled(layer: Any) -> bool:
    """Layers whose connections live per event loop (channels_redis): those the publisher serves. The
    in-memory layer (one process, tests) keeps being sent to directly."""
    return type(layer).__module__.startswith("channels_redis.")


publisher = Publisher()
