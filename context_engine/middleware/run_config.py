"""What a run hands the compression middleware through its config's ``configurable``: the thread's
pinned message ids and the run's stop check (both optional; outside a graph run, neither)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from langgraph.config import get_config

from context_engine.state import PINNED_IDS_CONFIG_KEY, STOP_CHECK_CONFIG_KEY


def _configurable() -> dict[str, Any]:
    try:
        return get_config().get("configurable") or {}
    except RuntimeError:  # outside a graph run
        return {}


def configured_pins() -> Collection[str]:
    pinned = _configurable().get(PINNED_IDS_CONFIG_KEY)
    return pinned if isinstance(pinned, list | tuple | set | frozenset) else ()


def configured_stop() -> Callable[[], bool] | None:
    """The run's stop check: True once the user pressed Stop (no summary call or model call follows)."""
    check = _configurable().get(STOP_CHECK_CONFIG_KEY)
    return check if callable(check) else None
