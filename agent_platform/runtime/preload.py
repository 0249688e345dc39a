"""The modules a run imports on first use (the OpenAI client, the PostgreSQL checkpointer, the Redis
channel layer), imported ahead: a Celery worker's main process imports them before it forks its pool,
so every child shares them instead of its first run paying a second of imports."""

from __future__ import annotations

import importlib
import logging

logger = logging.getLogger(__name__)

RUN_MODULES = (
    "langchain_openai",
    "openai.resources.chat",
    "httpcore",
    "langgraph.checkpoint.postgres",
    "psycopg_pool",
    "channels_redis.core",
)


def run_modules_preload() -> None:
    for name in RUN_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional backend this deployment does not use
            logger.debug("Not preloading %s: not installed", name)
