from django.apps import AppConfig


class CompressionConfig(AppConfig):
    name = "compression"

    def ready(self) -> None:
        # Imported here, once the app registry is ready (the receivers import models).
        from compression.receivers import (
            export_records,
            record_run_compression,
            record_usage_reading,
            recover_jobs,
            thread_held_by_job,
        )
        from conversations.signals import (
            recovery_pass,
            run_compression_event,
            run_usage_reported,
            thread_export_records,
            thread_maintenance_check,
        )

        run_compression_event.connect(
            record_run_compression, dispatch_uid="compression.record_run_compression"
        )
        run_usage_reported.connect(record_usage_reading, dispatch_uid="compression.record_usage_reading")
        thread_maintenance_check.connect(thread_held_by_job, dispatch_uid="compression.thread_held_by_job")
        recovery_pass.connect(recover_jobs, dispatch_uid="compression.recover_jobs")
        thread_export_records.connect(export_records, dispatch_uid="compression.export_records")
