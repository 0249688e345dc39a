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
