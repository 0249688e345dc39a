"""One Redis connection pool per server and process for the cache, one client object per pool, and a
cache that degrades instead of raising while Redis is unreachable.

Django keeps one cache object per thread, and its Redis backend gives each object a pool of its own:
every new thread (a run's graph workers, its lease and stream timers) opened fresh connections. This
pool class hands every cache object of a process the same pool (thread-safe, and redis-py starts
anew after a fork), so threads reuse connections instead.

Redis holds nothing the database does not (run signals, markers, throttle counts: see docs/settings.md
``REDIS_URL``). While it does not answer, every cache call answers as an absent key would (a write is
lost, ``incr`` raises ``ValueError`` as for an expired key) and ``cache_available()`` says so, so a
reader with a source of truth (the Stop check: ``AgentRun.cancel_requested_at``) reads that instead.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import redis
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

from agent_platform.cache_outage import cache_outage

logger = logging.getLogger(__name__)

# What an unreachable or stalled server raises (redis-py wraps socket errors in ConnectionError).
UNREACHABLE = (redis.ConnectionError, redis.TimeoutError, OSError)


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


def _degrading(default: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make a cache call answer ``default`` (``ValueError`` when ``default`` is that class) instead of
    raising while Redis is unreachable."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not cache_outage.down():
                try:
                    return method(self, *args, **kwargs)
                except UNREACHABLE as exc:
                    cache_outage.failed(exc)
            if default is ValueError:  # incr/decr: as a key that expired, which callers handle
                raise ValueError("The cache is unreachable")
            return default() if callable(default) else default

        return call

    return wrap


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

    add = _degrading(False)(RedisCacheClient.add)
    set = _degrading(None)(RedisCacheClient.set)
    touch = _degrading(False)(RedisCacheClient.touch)
    delete = _degrading(False)(RedisCacheClient.delete)
    get_many = _degrading(dict)(RedisCacheClient.get_many)
    has_key = _degrading(False)(RedisCacheClient.has_key)
    incr = _degrading(ValueError)(RedisCacheClient.incr)
    set_many = _degrading(list)(RedisCacheClient.set_many)
    delete_many = _degrading(None)(RedisCacheClient.delete_many)
    clear = _degrading(False)(RedisCacheClient.clear)

    def get(self, key: Any, default: Any) -> Any:
        if cache_outage.down():
            return default
        try:
            return super().get(key, default)
        except UNREACHABLE as exc:
            cache_outage.failed(exc)
            return default


class SharedClientRedisCache(RedisCache):
    """The cache backend on ``SharedClientCacheClient`` (and, in settings, ``SharedConnectionPool``)."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClientCacheClient
