"""Use cases of threads and runs (writes). Reads are in ``conversations.selectors``."""

from conversations.services.cancel import run_cancel
from conversations.services.dispatch import run_dispatch_next, run_execute, run_start
from conversations.services.execution import run_claim
from conversations.services.intake import IntakeResult, message_intake, run_resume
from conversations.services.pins import PinState, message_pin, message_unpin
from conversations.services.recovery import RecoveryReport, runs_recover
from conversations.services.sidebar import thread_archive_set, thread_pin_set, thread_restore
from conversations.services.threads import (
    NewMessage,
    message_append,
    thread_create,
    thread_lock,
    thread_rename,
    thread_soft_delete,
)

__all__ = [
    "IntakeResult",
    "NewMessage",
    "PinState",
    "RecoveryReport",
    "message_append",
    "message_intake",
    "message_pin",
    "message_unpin",
    "run_cancel",
    "run_claim",
    "run_dispatch_next",
    "run_execute",
    "run_resume",
    "run_start",
    "runs_recover",
    "thread_archive_set",
    "thread_create",
    "thread_lock",
    "thread_pin_set",
    "thread_rename",
    "thread_restore",
    "thread_soft_delete",
]
