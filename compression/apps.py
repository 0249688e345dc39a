from django.apps import AppConfig


class CompressionConfig(AppConfig):
    name = "compression"

    def ready(self) -> None:
        # Imported here, once the app registry is ready (the receivers import models).
        from compression.receivers import record_run_compression, record_usage_reading
        from conversations.signals import run_compression_event, run_usage_reported

        run_compression_event.connect(
            record_run_compression, dispatch_uid="compression.record_run_compression"
        )
        run_usage_reported.connect(record_usage_reading, dispatch_uid="compression.record_usage_reading")
