"""Use cases of thread maintenance (writes): compress (``compress``; as jobs: ``jobs``, ``job_control``,
``dispatch``), undo (``undo``), and the audit records (``records``). They import the engine and ``conversations``; nothing imports them back except
this app's interfaces (API, admin, command, tasks) and its ``ready()`` hook."""

from compression.services.compress import (
    CompressionOutcome,
    compress_job_finish,
    conversation_compress,
    thread_compress,
    thread_compress_submit,
    user_key,
)
from compression.services.dispatch import compress_job_start, compress_jobs_recover
from compression.services.forced import require_idle
from compression.services.job_control import (
    compress_job_body,
    compress_job_cancel,
    compress_job_get,
    compress_job_raise,
    compress_job_wait,
)
from compression.services.jobs import compress_job_submit
from compression.services.preview import thread_compress_preview
from compression.services.records import compression_record_from_event
from compression.services.undo import thread_compress_undo

__all__ = [
    "CompressionOutcome",
    "compress_job_body",
    "compress_job_cancel",
    "compress_job_finish",
    "compress_job_get",
    "compress_job_raise",
    "compress_job_start",
    "compress_job_submit",
    "compress_job_wait",
    "compress_jobs_recover",
    "user_key",
    "compression_record_from_event",
    "conversation_compress",
    "require_idle",
    "thread_compress",
    "thread_compress_submit",
    "thread_compress_preview",
    "thread_compress_undo",
]
