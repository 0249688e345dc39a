"""Bulk compression of idle threads through the manual-compression service (same lock, same rules)."""

from __future__ import annotations

import json
import re
import signal
import threading
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from tqdm import tqdm

from agent_platform.models import Agent
from compression.bulk import BulkReport, bulk_compress_one, celery_broker_configured
from compression.selectors import compression_candidates, conversation_is_busy
from compression.tasks import bulk_compress_enqueue
from context_engine.config import COMPRESSION_CAPABILITY

_DURATION = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(value: str) -> timedelta:
    match = _DURATION.match(value.strip().lower())
    if not match:
        raise CommandError(f"Bad duration {value!r}: use a number and a unit, e.g. 30m, 2h, 7d.")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


class Command(BaseCommand):
    help = "Compress the context of idle threads (dry run, synchronous with progress, or Celery fan-out)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--agent", help="Only threads of the agent with this slug.")
        parser.add_argument("--owner", help="Only threads of this username.")
        parser.add_argument(
            "--min-pressure", type=float, help="Only threads at or above this pressure ratio (e.g. 0.85)."
        )
        parser.add_argument("--idle-for", help="Only threads idle at least this long (30m, 2h, 7d).")
        parser.add_argument("--limit", type=int, help="At most this many threads, highest pressure first.")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--dry-run", action="store_true", help="Report candidates; write nothing.")
        mode.add_argument(
            "--async", dest="use_async", action="store_true", help="One Celery task per thread."
        )
        parser.add_argument("--queue", help="With --async: the Celery queue to send the tasks to.")
        parser.add_argument("--json", dest="as_json", action="store_true", help="Machine-readable output.")

    def handle(self, *args, **options) -> None:
        filters = self._filters(options)
        if options["use_async"] and not celery_broker_configured():
            raise CommandError("--async needs a Celery broker: set REDIS_URL (or CELERY_BROKER_URL).")
        candidates = list(compression_candidates(**filters))
        if options["dry_run"]:
            self._dry_run(candidates, as_json=options["as_json"])
        elif options["use_async"]:
            self._fan_out(candidates, as_json=options["as_json"], queue=options["queue"])
        else:
            self._run(candidates, as_json=options["as_json"], verbosity=options["verbosity"])

    def _filters(self, options) -> dict:
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be at least 1.")
        if options["min_pressure"] is not None and options["min_pressure"] < 0:
            raise CommandError("--min-pressure must be 0 or more.")
        if options["agent"] and not Agent.objects.filter(slug=options["agent"]).exists():
            raise CommandError(f"No agent with slug {options['agent']!r}.")
        user_model = get_user_model()
        if (
            options["owner"]
            and not user_model.objects.filter(**{user_model.USERNAME_FIELD: options["owner"]}).exists()
        ):
            raise CommandError(f"No user {options['owner']!r}.")
        if options["queue"] and not options["use_async"]:
            raise CommandError("--queue only applies with --async.")
        return {
            "agent_slug": options["agent"],
            "min_pressure": options["min_pressure"],
            "idle_for": parse_duration(options["idle_for"]) if options["idle_for"] else None,
            "owner": options["owner"],
            "limit": options["limit"],
        }

    def _dry_run(self, candidates, *, as_json: bool) -> None:
        now = timezone.now()
        rows = [
            {
                "thread": str(c.thread_id),
                "agent": c.agent.slug,
                "owner": c.owner.get_username(),
                "tokens": c.context_tokens,
                "pressure": c.pressure_ratio,
                "last_activity": c.last_activity_at.isoformat(timespec="seconds"),
                "idle": str(now - c.last_activity_at).split(".")[0],
                "would": _would(c),
            }
            for c in candidates
        ]
        if as_json:
            self.stdout.write(json.dumps({"dry_run": True, "candidates": rows}, indent=2))
            return
        header = ("thread", "agent", "owner", "tokens", "pressure", "last_activity", "idle", "would")
        table = [header] + [tuple("-" if r[k] is None else str(r[k]) for k in header) for r in rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        for row in table:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        self.stdout.write(f"{len(rows)} candidate thread(s); dry run, nothing written.")

    def _fan_out(self, candidates, *, as_json: bool, queue: str | None) -> None:
        batch = bulk_compress_enqueue(conversation_ids=[c.pk for c in candidates], queue=queue)
        queued = [str(c.thread_id) for c in candidates]
        if as_json:
            self.stdout.write(json.dumps({"queued": queued, "batch": batch, "queue": queue}, indent=2))
        else:
            self.stdout.write(
                self.style.SUCCESS(f"Queued {len(queued)} thread(s) for compaction (batch {batch}).")
            )

    def _run(self, candidates, *, as_json: bool, verbosity: int) -> None:
        report = BulkReport()
        threads: list[dict[str, str]] = []
        with (
            _StopBetweenThreads(self.stderr) as stop,
            tqdm(
                total=len(candidates), desc="compacting", unit="thread", disable=as_json or verbosity == 0
            ) as progress,
        ):
            for done, conversation in enumerate(candidates):
                if stop.requested:
                    report.interrupted, report.not_started = True, len(candidates) - done
                    break
                try:
                    outcome = bulk_compress_one(conversation_id=conversation.pk)
                except KeyboardInterrupt:
                    # Second Ctrl-C: this thread's transaction has rolled back, so it is untouched.
                    report.interrupted, report.not_started = True, len(candidates) - done
                    break
                report.add(outcome)
                threads.append({"thread": str(conversation.thread_id), "outcome": outcome.label})
                progress.update()
                if verbosity >= 2 and not as_json:
                    progress.write(f"{conversation.thread_id}: {outcome.label}")
        if as_json:
            self.stdout.write(json.dumps({**report.as_dict(), "threads": threads}, indent=2))
        else:
            style = self.style.WARNING if report.interrupted or report.failed else self.style.SUCCESS
            self.stdout.write(style(report.summary_line()))


class _StopBetweenThreads:
    """Ctrl-C asks to stop after the thread in progress (which then finishes, or rolls back, whole);
    a second Ctrl-C aborts that thread too (its transaction rolls back)."""

    def __init__(self, stderr) -> None:
        self.stderr = stderr
        self.requested = False
        self._previous = None

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.stderr.write("\nStopping after the current thread (Ctrl-C again to abandon it).")

    def __enter__(self) -> _StopBetweenThreads:
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _would(conversation) -> str:
    if not conversation.agent.has_capability(COMPRESSION_CAPABILITY):
        return "skip: capability missing"
    if conversation_is_busy(conversation):
        return "skip: busy"
    return "compress"
