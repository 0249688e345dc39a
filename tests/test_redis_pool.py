"""The cache's Redis pool is one per process: threads (each with its own Django cache object) reuse
its connections instead of opening their own."""

from __future__ import annotations

import os
import threading

import pytest


@pytest.mark.redis
def test_cache_objects_of_many_threads_share_one_pool_and_its_connections():
    from django.core.cache.backends.redis import RedisCache

    def cache() -> RedisCache:
        return RedisCache(
            os.environ["REDIS_URL"], {"OPTIONS": {"pool_class": "config.redis_pool.SharedConnectionPool"}}
        )

    pools = []

    def use() -> None:
        own = cache()  # what Django builds for every new thread
        own.set("redis-pool-test", 1, 10)
        pools.append(own._cache._get_connection_pool(write=True))

    for _ in range(20):  # twenty short-lived threads, one after another, as a run's timers are
        thread = threading.Thread(target=use)
        thread.start()
        thread.join()
    assert len({id(pool) for pool in pools}) == 1
    pool = pools[0]
    assert len(pool._available_connections) + len(pool._in_use_connections) == 1


@pytest.mark.redis
def test_cache_objects_of_many_threads_share_one_client_object():
    """Django's own backend builds a ``redis.Redis`` per call; the project's builds one per pool."""
    from config.redis_pool import SharedClientRedisCache

    options = {"OPTIONS": {"pool_class": "config.redis_pool.SharedConnectionPool"}}
    clients = []

    def use() -> None:
        own = SharedClientRedisCache(os.environ["REDIS_URL"], options)
        own.set("redis-client-test", 2, 10)
        assert own.get("redis-client-test") == 2
        clients.extend([own._cache.get_client(write=True), own._cache.get_client()])

    threads = [threading.Thread(target=use) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(clients) == 20 and len({id(client) for client in clients}) == 1
