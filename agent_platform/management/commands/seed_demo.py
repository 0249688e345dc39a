"""Idempotently seed the embedded demo: an admin login, a demo agent, and (when available) a knowledge base."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agent_platform.seed import demo_seed


class Command(BaseCommand):
    help = "Create the demo admin login, demo agent and demo knowledge base if they are missing."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--password", default=None, help="Admin password (default: env DEMO_ADMIN_PASSWORD or 'admin')."
        )

    def handle(self, *args, password: str | None, **options) -> None:
        if not settings.DEBUG:
            raise CommandError("seed_demo creates a known login; it only runs with DEBUG on.")
        result = demo_seed(password=password)
        for line in result.report_lines():
            self.stdout.write(line)
        # No address: the server prints where it listens once it does (``serve``), on the port it got.
        self.stdout.write(self.style.SUCCESS(f"Admin login: {result.username} / {result.password}"))
