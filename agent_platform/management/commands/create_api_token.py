"""Print a new bearer token for a user (shown once; only its hash is stored)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agent_platform.services import api_token_issue


class Command(BaseCommand):
    help = "Create an API bearer token for USERNAME and print it once."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label to recognise the token by in the admin.")

    def handle(self, *args, username: str, name: str, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        if not user.is_active:
            raise CommandError(f"User {username!r} is inactive.")
        _token, raw = api_token_issue(user=user, name=name)
        self.stdout.write(raw)
