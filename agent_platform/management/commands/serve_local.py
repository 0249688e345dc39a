"""``serve`` with a real model beside it: starts llama.cpp with the packaged SmolLM2-135M (the
``local-model`` extra), registers it as the "Local (SmolLM2-135M)" endpoint and agent, serves the app, and
stops the model server when the app stops. ``make run-local`` calls it."""

from __future__ import annotations

from django.core.management.base import CommandError

from agent_platform.local_model import (
    DEFAULT_CONTEXT_WINDOW,
    MODEL_ALIAS,
    LocalModelUnavailable,
    seed_local_agent,
    start_server,
)
from agent_platform.management.commands.serve import Command as ServeCommand


class Command(ServeCommand):
    help = "Start the local llama.cpp model server, seed its endpoint and agent, and serve the app."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--model-port", type=int, default=0, help="Port of the model server (0: a free one)."
        )
        parser.add_argument(
            "--context-window",
            type=int,
            default=DEFAULT_CONTEXT_WINDOW,
            help=f"The model server's context window in tokens (default {DEFAULT_CONTEXT_WINDOW}).",
        )

    def handle(self, *args, **options) -> None:
        try:
            server = start_server(port=options["model_port"], context_window=options["context_window"])
        except LocalModelUnavailable as exc:
            raise CommandError(str(exc)) from exc
        try:
            agent = seed_local_agent(
                base_url=server.base_url, context_window=server.context_window, api_key=server.api_key
            )
            self.stdout.write(
                f"llama.cpp serves {MODEL_ALIAS} at {server.base_url} (window {server.context_window} tokens); "
                f"chat with the agent “{agent.name}”."
            )
            # The reloader would run this command again in a child process, starting a second model server.
            options["use_reloader"] = False
            super().handle(*args, **options)
        finally:
            server.stop()
