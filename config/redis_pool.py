"""One Redis connection pool per server and process for the cache.

Django keeps one cache object per thread, and its Redis backend gives each object a pool of its own:
every new thread (a run's graph workers, its lease and stream timers) opened fresh connections. This
pool class hands every cache object of a process the same pool (thread-safe, and redis-py starts
anew after a fork), so threads reuse connections instead.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import redis


class SharedConnectionPool(redis.ConnectionPool):
    _shared: dict[tuple[int, str], redis.ConnectionPool] = {}
    _lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> redis.ConnectionPool:
        key = (os.getpid(), url)
        with cls._lock:
            pool = cls._shared.get(key)
            if pool is None:
                pool = cls._shared[key] = super().from_url(url, **kwargs)
            return pool
