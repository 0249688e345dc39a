"""``runserver`` (Daphne: HTTP and WebSockets) whose start-up output ends with where to chat and where
the admin is, printed once the server listens (with the real port when 0 was asked for)."""

from __future__ import annotations

from daphne.management.commands.runserver import Command as DaphneRunserver
from django.core.management import call_command


def where_lines(*, protocol: str, host: str, port: int) -> str:
    host = f"[{host}]" if ":" in host else host
    base = f"{protocol}://{host}:{port}"
    return f"\nChat:  {base}/\nAdmin: {base}/admin/\n"


class Command(DaphneRunserver):
    help = "Start the development server (HTTP + WebSockets); it ends by printing the chat and admin URLs."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--prepare",
            action="store_true",
            help="Migrate and seed the demo first, in this process (make run: one start-up, not three).",
        )

    def handle(self, *args, **options):
        if options["prepare"]:
            call_command("migrate", interactive=False, verbosity=1)
            call_command("seed_demo")
        return super().handle(*args, **options)

    def inner_run(self, *args, **options):
        command = self
        base_server = self.server_cls

        class AnnouncingServer(base_server):
            def listen_success(self, port) -> None:
                super().listen_success(port)
                if hasattr(port, "getHost"):
                    address = port.getHost()
                    command.stdout.write(
                        where_lines(protocol=command.protocol, host=address.host, port=address.port)
                    )

        self.server_cls = AnnouncingServer
        try:
            return super().inner_run(*args, **options)
        finally:
            self.server_cls = base_server
