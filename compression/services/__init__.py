"""Use cases of thread maintenance (writes): compress (``compress``), undo (``undo``), and the audit
records (``records``). They import the engine and ``conversations``; nothing imports them back except
this app's interfaces (API, admin, command, tasks) and its ``ready()`` hook."""

from compression.services.compress import (
    CompressionOutcome,
    conversation_compress,
    require_idle,
    thread_compress,
)
from compression.services.preview import thread_compress_preview
from compression.services.records import compression_record_from_event
from compression.services.undo import thread_compress_undo

__all__ = [
    "CompressionOutcome",
    "compression_record_from_event",
    "conversation_compress",
    "require_idle",
    "thread_compress",
    "thread_compress_preview",
    "thread_compress_undo",
]
