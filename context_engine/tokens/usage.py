"""Provider-usage arithmetic: what one model call reported, and its sum into running totals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage


def response_usage(messages: Sequence[BaseMessage]) -> dict[str, Any] | None:
    """The provider-reported usage of a model call (``usage_metadata`` of its AI messages), if any."""
    total: dict[str, Any] | None = None
    for message in messages:
        usage = getattr(message, "usage_metadata", None)
        if usage:
            total = add_usage(total, dict(usage))
    return total


def add_usage(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Key-wise sum of two usage dicts (nested detail dicts included); other values: right wins."""
    merged: dict[str, Any] = dict(left or {})
    for key, value in (right or {}).items():
        current = merged.get(key)
        if isinstance(value, Mapping):
            merged[key] = add_usage(current if isinstance(current, Mapping) else None, value)
        elif (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and isinstance(current, int | float)
        ):
            merged[key] = current + value
        else:
            merged[key] = value
    return merged


def count_call(usage: Mapping[str, Any] | None, accumulated: Mapping[str, Any] | None) -> dict[str, Any]:
    """``accumulated`` plus one call of ``usage`` (``calls`` counts the calls)."""
    return add_usage(accumulated, {**(usage or {}), "calls": 1})
