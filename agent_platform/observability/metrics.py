"""The platform's Prometheus metrics, defined once; each is moved by the one owner of its event.

Owners: compression records (``compression.services.records``: compressions and tokens saved), the
run executor (``conversations.services.execution``: runs by status and their duration), lease recovery
(``conversations.services.leases``: reclaims), the live-event publisher (``conversations.publisher``:
events dropped), the cache (``config.redis_pool``: calls that found Redis down), and the chat-model factory's callback below (summary
calls: latency and failures). Queue depth is read from the database when scraped (``config.ops``).
With ``PROMETHEUS_MULTIPROC_DIR`` set (before the process starts), prometheus-client keeps these
values in files shared by every worker process of the machine.
"""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from prometheus_client import Counter, Histogram

from context_engine.formats import SUMMARY_MARKER_KEY, SUMMARY_MARKER_VALUE

COMPRESSIONS = Counter(
    "agent_platform_compressions",
    "Compressions by trigger (auto, manual, bulk, undo), level and outcome (or failed).",
    ["trigger", "level", "outcome"],
)
TOKENS_SAVED = Counter(
    "agent_platform_compression_tokens_saved",
    "Tokens taken out of the model's view by compressions (before minus after).",
    ["trigger", "level"],
)
SUMMARY_CALL_SECONDS = Histogram(
    "agent_platform_summary_call_seconds",
    "Duration of summary model calls (repair calls included).",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120),
)
SUMMARY_CALL_FAILURES = Counter(
    "agent_platform_summary_call_failures", "Summary model calls that raised an error."
)
RUNS = Counter("agent_platform_runs", "Agent runs that ended, by final status.", ["status"])
RUN_SECONDS = Histogram(
    "agent_platform_run_seconds",
    "Agent run duration, from claim to end.",
    ["status"],
    buckets=(0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600),
)
LEASE_RECLAIMS = Counter(
    "agent_platform_run_lease_reclaims",
    "Runs taken back from a lost worker, by what became of them (queued, failed, cancelled).",
    ["outcome"],
)

LIVE_EVENTS_DROPPED = Counter(
    "agent_platform_live_events_dropped",
    "Live events given up: the channel layer did not take them in time (unreachable), or too many "
    "waited (buffer_full).",
    ["reason"],
)
CACHE_ERRORS = Counter(
    "agent_platform_cache_errors", "Cache calls that found Redis unreachable (each opens the breaker)."
)


def compression_observed(*, trigger: str, level: str, outcome: str, tokens_saved: int) -> None:
    COMPRESSIONS.labels(trigger=trigger, level=level or "none", outcome=outcome or "none").inc()
    if tokens_saved > 0:
        TOKENS_SAVED.labels(trigger=trigger, level=level or "none").inc(tokens_saved)


def run_observed(*, status: str, seconds: float | None) -> None:
    RUNS.labels(status=status).inc()
    if seconds is not None and seconds >= 0:
        RUN_SECONDS.labels(status=status).observe(seconds)


def lease_reclaim_observed(*, outcome: str) -> None:
    LEASE_RECLAIMS.labels(outcome=outcome).inc()


def live_event_dropped(*, reason: str) -> None:
    LIVE_EVENTS_DROPPED.labels(reason=reason).inc()


def cache_error_observed() -> None:
    CACHE_ERRORS.inc()


class SummaryCallMetrics(BaseCallbackHandler):
    """Times the chat model's summary calls (those the engine marks in their metadata) and counts the
    ones that fail; the agent's own replies pass untouched. Attached by the chat-model factory, so
    summaries in runs, manual and bulk compressions are all timed in one place."""

    def __init__(self) -> None:
        self.started: dict[UUID, float] = {}

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, metadata: dict | None = None, **kwargs: Any
    ) -> None:
        if (metadata or {}).get(SUMMARY_MARKER_KEY) == SUMMARY_MARKER_VALUE:
            self.started[run_id] = time.perf_counter()

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        started = self.started.pop(run_id, None)
        if started is not None:
            SUMMARY_CALL_SECONDS.observe(time.perf_counter() - started)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        started = self.started.pop(run_id, None)
        if started is not None:
            SUMMARY_CALL_SECONDS.observe(time.perf_counter() - started)
            SUMMARY_CALL_FAILURES.inc()


SUMMARY_CALL_METRICS = SummaryCallMetrics()
