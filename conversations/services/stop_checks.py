"""Whether the user stopped a running run, as its executor, its model call and its waiting tools ask.

Stop sets a cache flag and ``AgentRun.cancel_requested_at`` (the source of truth). The flag is read at
most every ``FLAG_CHECK_SECONDS`` whichever thread of the run asks (a model streams tokens faster than
a user can notice 50 ms); the database, for a flag lost or set in another process's cache, at most
every ``CANCEL_DB_CHECK_SECONDS`` from the executor and every ``TOOL_STOP_DB_CHECK_SECONDS`` from a
waiting tool, counted from the last read by either. Once seen, a Stop stays seen. While the cache is
down (Redis unreachable) the flag's read becomes the database's, every ``TOOL_STOP_DB_CHECK_SECONDS``.
"""

from __future__ import annotations

import threading
import time

from django.db import connection

from conversations import run_signals
from conversations.models import AgentRun

FLAG_CHECK_SECONDS = 0.05
# The executor asks between streamed chunks (the database at most this often).
CANCEL_DB_CHECK_SECONDS = 1.0
# A waiting tool has no chunks to check between: its watcher asks the database this often (Stop ≤ 1 s).
TOOL_STOP_DB_CHECK_SECONDS = 0.5


class RunStopChecks:
    def __init__(self, run: AgentRun) -> None:
        self.run_id = run.pk
        # The executor read the row at its claim (a queued run has no Stop to record: Stop cancels it).
        self.stopped = run.cancel_requested_at is not None
        self.db_checked_at = time.monotonic()
        self.flag_checked_at = float("-inf")
        self.executor_thread = threading.get_ident()
        # Set by the run's lease renewer once another worker took the run (``leases.run_lease``).
        self.lease_lost = threading.Event()

    def flag(self) -> bool:
        """The cache flag (every token of a model call asks: ``run_signals.StopOnCancel``)."""
        if self.stopped:
            return True
        now = time.monotonic()
        if now - self.flag_checked_at < FLAG_CHECK_SECONDS:
            return False
        self.flag_checked_at = now
        flag = run_signals.cancel_flag_read(run_id=self.run_id)
        if flag is None:  # the cache is down: the database, as often as a waiting tool asks it
            return self._recorded_here(every=TOOL_STOP_DB_CHECK_SECONDS)
        self.stopped = self.stopped or flag
        return self.stopped

    def by_executor(self) -> bool:
        """Between streamed chunks, on the executor's own connection."""
        return self.flag() or self._recorded(every=CANCEL_DB_CHECK_SECONDS)

    def in_tool(self) -> bool:
        """A tool call's watcher, on a graph thread: Stop, or the lease lost. A database read there is on
        that thread's own connection, closed right after so it never outlives the check."""
        if self.flag() or self.lease_lost.is_set():
            return True
        return self._recorded_here(every=TOOL_STOP_DB_CHECK_SECONDS)

    def _recorded_here(self, *, every: float) -> bool:
        """``_recorded`` from whichever thread asks: another thread's connection is closed after it."""
        try:
            return self._recorded(every=every)
        finally:
            if threading.get_ident() != self.executor_thread:
                connection.close()

    def _recorded(self, *, every: float) -> bool:
        now = time.monotonic()
        if now - self.db_checked_at < every:
            return False
        self.db_checked_at = now
        if not AgentRun.objects.filter(pk=self.run_id, cancel_requested_at__isnull=False).exists():
            return False
        # The flag was lost or lives in another process's cache: set it where this run's threads see it.
        run_signals.cancel_flag_set(run_id=self.run_id)
        self.stopped = True
        return True
