"""``manage.py recover_runs``: re-queue (or fail) runs left ``running`` by a crashed worker."""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand

from conversations.services import runs_recover


class Command(BaseCommand):
    help = "Re-queue runs orphaned by a crashed worker; fail those already re-queued once."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--stale-minutes",
            type=float,
            default=None,
            help="Treat a running run with no progress for this many minutes as orphaned (default 15).",
        )

    def handle(self, *args, stale_minutes: float | None = None, **options) -> None:
        stale_after = timedelta(minutes=stale_minutes) if stale_minutes is not None else None
        report = runs_recover(stale_after=stale_after)
        for run_id in report.requeued:
            self.stdout.write(f"re-queued run {run_id}")
        for run_id in report.failed:
            self.stdout.write(f"failed run {run_id}")
        self.stdout.write(self.style.SUCCESS(f"Recovery: {report.summary()}."))
