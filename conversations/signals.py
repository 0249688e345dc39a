"""Hooks other apps connect to, so ``conversations`` never imports them back."""

from __future__ import annotations

from django.dispatch import Signal

# Sent by the run executor for every ``compression`` event a run emits, before relaying it to the
# thread's pages; keyword arguments ``run`` (the AgentRun) and ``event`` (the JSON-safe payload,
# without ``type``). ``compression`` connects its audit records here in ``ready()``.
run_compression_event = Signal()

# Sent by the run executor for every main model call whose provider reported prompt tokens; keyword
# arguments ``run`` (the AgentRun), ``estimated`` (our raw estimate of that request) and ``reported``.
# ``compression`` connects the model's stored calibration here in ``ready()``.
run_usage_reported = Signal()

# Asked by the busy rule (``selectors.thread_in_maintenance``), usually under the thread's row lock;
# keyword argument ``conversation``. A receiver returns True while work of its app holds the thread
# (``compression``: a queued or running compression job), so intake answers 409 without a lock wait.
thread_maintenance_check = Signal()

# Sent by ``recovery.runs_recover`` on each pass, after the runs: leased work of other apps is reclaimed
# by the same timer (``compression``: jobs whose worker died).
recovery_pass = Signal()

# Asked by ``export.thread_export``; keyword argument ``conversation``. A receiver returns a list of
# JSON-safe dicts for the export's ``compression_records`` (``compression``: its audit records, oldest
# first, with ``created_at``, ``trigger``, ``level``, ``status``, ``before_tokens``, ``after_tokens``,
# ``compressed_messages``, ``file_path``).
thread_export_records = Signal()
