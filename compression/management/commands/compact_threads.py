"""Bulk compaction of idle threads through the manual-compression service (same lock, same rules)."""

from __future__ import annotations

import json
import re
import signal
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from tqdm import tqdm

from compression.bulk import BulkReport, bulk_compact_enqueue, bulk_compact_one
from compression.selectors import compaction_candidates

_DURATION = re.compile(r"^(\d+)([smhdw])$")
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
            "--min-pressure", type=float, help="Only threads at or above this pressure ratio."
        )
        parser.add_argument(
            "--idle-for", type=parse_duration, help="Only threads idle this long (30m, 2h, 7d)."
        )
        parser.add_argument("--limit", type=int, help="At most this many threads.")
        parser.add_argument("--dry-run", action="store_true", help="Report candidates; write nothing.")
        parser.add_argument(
            "--async", dest="use_async", action="store_true", help="One Celery task per thread."
        )
        parser.add_argument("--json", dest="as_json", action="store_true", help="Machine-readable output.")

    def handle(self, *args, **options) -> None:
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be at least 1.")
        if options["min_pressure"] is not None and options["min_pressure"] < 0:
            raise CommandError("--min-pressure must be 0 or more.")
        candidates = list(
            compaction_candidates(
                agent_slug=options["agent"],
                min_pressure=options["min_pressure"],
                idle_for=options["idle_for"],
                owner=options["owner"],
                limit=options["limit"],
            )
        )
        if options["dry_run"]:
            self._dry_run(candidates, as_json=options["as_json"])
        elif options["use_async"]:
            self._fan_out(candidates, as_json=options["as_json"])
        else:
            self._run(candidates, as_json=options["as_json"], verbosity=options["verbosity"])

    def _dry_run(self, candidates, *, as_json: bool) -> None:
        now = timezone.now()
        rows = [
            {
                "thread": str(c.thread_id),
                "agent": c.agent.slug,
                "owner": c.owner.get_username(),
                "tokens": c.context_tokens,
                "pressure": c.pressure_ratio,
                "idle": str(now - c.last_activity_at).split(".")[0],
                "would": _would(c),
            }
            for c in candidates
        ]
        if as_json:
            self.stdout.write(json.dumps({"dry_run": True, "candidates": rows}, indent=2))
            return
        header = ("thread", "agent", "owner", "tokens", "pressure", "idle", "would")
        table = [header] + [tuple("-" if r[k] is None else str(r[k]) for k in header) for r in rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        for row in table:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        self.stdout.write(f"{len(rows)} candidate thread(s); dry run, nothing written.")

    def _fan_out(self, candidates, *, as_json: bool) -> None:
        batch = bulk_compact_enqueue(conversation_ids=[c.pk for c in candidates])
        queued = [str(c.thread_id) for c in candidates]
        if as_json:
            self.stdout.write(json.dumps({"queued": queued, "batch": batch}, indent=2))
        else:
            self.stdout.write(
                self.style.SUCCESS(f"Queued {len(queued)} thread(s) for compaction (batch {batch}).")
            )

    def _run(self, candidates, *, as_json: bool, verbosity: int) -> None:
        report = BulkReport()
        stop = {"requested": False}

        # Ctrl-C stops between threads: the thread in progress finishes (or rolls back) whole.
        def request_stop(signum, frame) -> None:
            stop["requested"] = True

        previous = signal.signal(signal.SIGINT, request_stop)
        try:
            progress = tqdm(candidates, desc="compacting", unit="thread", disable=as_json or verbosity == 0)
            for conversation in progress:
                if stop["requested"]:
                    report.interrupted = True
                    break
                outcome = bulk_compact_one(conversation_id=conversation.pk)
                report.add(outcome)
                if verbosity >= 2 and not as_json:
                    progress.write(f"{conversation.thread_id}: {outcome.label}")
        finally:
            signal.signal(signal.SIGINT, previous)
        if as_json:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            style = self.style.WARNING if report.interrupted or report.failed else self.style.SUCCESS
            self.stdout.write(style(report.summary_line()))


def _would(conversation) -> str:
    if not conversation.agent.has_capability("context_compression"):
        return "skip: capability missing"
    if conversation.has_active_run:
        return "skip: busy"
    return "compress"
