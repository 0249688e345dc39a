"""``manage.py recover_runs``: re-queue (or fail) runs left ``running`` by a crashed worker."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from conversations.services import runs_recover


class Command(BaseCommand):
    help = (
        "Re-queue runs whose worker lost its lease (RUN_LEASE_SECONDS) or died on this host; fail those "
        "already re-queued once. Workers and in-process servers also do this by themselves."
    )

    def handle(self, *args, **options) -> None:
        # In-process runs would die with this command: leave them queued for the server to start.
        in_process = settings.RUN_EXECUTION == "inprocess"
        report = runs_recover(dispatch=not in_process)
        for run_id in report.requeued:
            self.stdout.write(f"re-queued run {run_id}")
        for run_id in report.failed:
            self.stdout.write(f"failed run {run_id}")
        if in_process:
            self.stdout.write(
                "Runs execute in the web server's process: it starts queued runs when it starts."
            )
        self.stdout.write(self.style.SUCCESS(f"Recovery: {report.summary()}."))
