from django.apps import AppConfig


class CompressionConfig(AppConfig):
    name = "compression"

    def ready(self) -> None:
        # Imported here, once the app registry is ready (the receivers import models).
        from compression.receivers import record_run_compression
        from conversations.signals import run_compression_event

        run_compression_event.connect(
            record_run_compression, dispatch_uid="compression.record_run_compression"
        )
