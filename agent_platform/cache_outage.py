"""Whether this process's cache found Redis unreachable lately: a circuit breaker the degrading cache
client (``config.redis_pool``) opens, and readers with a source of truth consult (``cache_available``).
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings

from agent_platform.observability.metrics import cache_error_observed

logger = logging.getLogger(__name__)


class CacheOutage:
    """Whether this process's cache found Redis unreachable lately (a circuit breaker).

    A call that fails opens the breaker for ``REDIS_RETRY_SECONDS``: calls meanwhile answer at once as
    an absent key would, without trying (a Stop check asks every 50 ms; a dead server must not cost a
    connect on each). The first call after that tries Redis again.
    """

    def __init__(self) -> None:
        self._down_until = float("-inf")
        self._lock = threading.Lock()

    def down(self) -> bool:
        return time.monotonic() < self._down_until

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            first = not self.down()
            self._down_until = time.monotonic() + settings.REDIS_RETRY_SECONDS
        cache_error_observed()
        if first:
            logger.warning("The cache's Redis did not answer (%s); degrading until it does", exc)


cache_outage = CacheOutage()


def cache_available() -> bool:
    """False while the cache's Redis is known unreachable: its answers then mean nothing (a key read
    as absent may be set); callers with a source of truth read it instead."""
    return not cache_outage.down()
