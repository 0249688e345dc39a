"""One Redis connection pool per server and process for the cache, and one client object per pool.

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
from django.core.cache.backends.redis import RedisCache, RedisCacheClient


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


class SharedClientCacheClient(RedisCacheClient):
    """Django's client builds a ``redis.Redis`` on every cache call (its constructor copies the whole
    response-callback table: a tenth of a millisecond, on every token's Stop check). One client per
    pool is enough: a ``redis.Redis`` is thread-safe, each command borrowing a pool connection."""

    _clients: dict[redis.ConnectionPool, redis.Redis] = {}
    _clients_lock = threading.Lock()

    def get_client(self, key: Any = None, *, write: bool = False) -> redis.Redis:
        pool = self._get_connection_pool(write)
        client = self._clients.get(pool)
        if client is None:
            with self._clients_lock:
                client = self._clients.setdefault(pool, self._client(connection_pool=pool))
        return client


class SharedClientRedisCache(RedisCache):
    """The cache backend on ``SharedClientCacheClient`` (and, in settings, ``SharedConnectionPool``)."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClientCacheClient
