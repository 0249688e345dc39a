"""The compaction horizon (issue 40): what keeps the prompt prefix a provider caches unchanged between
compression events.

Once compaction has run, the request is ``compacted[:count] + raw[count:since] + arrival[since:]``:

* the first ``count`` effective messages go out compacted (receipts, truncated arguments, saved
  media), as the last compression event fixed them, with the messages pinned then kept whole;
* the messages that went out before compaction was in force (below ``T``) and that the event did not
  need to compact go on as they went out;
* every message that arrived since goes out in its *arrival form*: what compaction makes of it while the model has
  not answered it yet (a large tool result is a receipt at once, a ``read_file`` page within its share
  stays whole, media stay inline). That form never changes as messages are appended after it.

So between two events the request only grows at its end. An event (the request reaching ``T``) moves
``count`` forward, only as far as the low-water mark needs (``low_water_count``), so the prefix changes
once for several turns; a summary starts a new horizon behind itself. A receipt is made once: its text
is a pure function of the result (``tool_results``), and a message before ``count`` is never shown
otherwise again until a summary folds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from context_engine.compaction.tool_results import (
    CompactionResult,
    FailedToolResult,
    SavedToolResult,
    compact_messages,
)
from context_engine.config import CompressionConfig
from context_engine.lru import LRU
from context_engine.store import ResultStore
from context_engine.tokens.messages import TokenProfile

UNIT_SLOTS = 4096  # turn units whose arrival forms are remembered per middleware instance


@dataclass(frozen=True)
class Horizon:
    """``count`` effective messages go out compacted; fixed at the event of the summary whose cutoff is
    ``cutoff`` (None: no summary), with ``pinned`` kept whole and the reference index left out when
    ``lean``."""

    count: int
    cutoff: int | None
    pinned: frozenset[str] = frozenset()
    lean: bool = False
    since: int | None = None  # messages from here on arrived under compaction; before it, raw (None: count)

    @property
    def arrival_from(self) -> int:
        return self.count if self.since is None else self.since

    def as_state(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "cutoff": self.cutoff,
            "pinned": sorted(self.pinned),
            "lean": self.lean,
            "since": self.arrival_from,
        }


def read_horizon(value: Any, *, cutoff: int | None, length: int) -> Horizon | None:
    """The horizon stored in state, when it belongs to the current summary (its ``cutoff``) and fits
    the effective messages (``length``); else None: no compaction until the request reaches ``T``."""
    if not isinstance(value, Mapping):
        return None
    count, stored_cutoff = value.get("count"), value.get("cutoff")
    if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= length:
        return None
    if stored_cutoff != cutoff:
        return None
    since = value.get("since", count)
    if not isinstance(since, int) or isinstance(since, bool) or not 0 <= since <= length:
        return None
    pinned = value.get("pinned")
    ids = frozenset(p for p in pinned if isinstance(p, str)) if isinstance(pinned, list) else frozenset()
    return Horizon(count, cutoff, ids, bool(value.get("lean")), since)


@dataclass
class Arrival:
    """The arrival forms of ``messages[start:]``, and the files saved (or not) for the units compacted
    for the first time in this call."""

    forms: list[BaseMessage] = field(default_factory=list)
    saved: list[SavedToolResult] = field(default_factory=list)
    failed: list[FailedToolResult] = field(default_factory=list)

    @property
    def written(self) -> bool:
        """A message got its receipt (or failed to) in this call: a new compaction to report. Only the
        units compacted in this call carry records (``ArrivalForms.arrival``)."""
        return bool(self.saved or self.failed)


def _unit(messages: Sequence[BaseMessage], index: int) -> tuple[int, int]:
    """The turn unit holding ``messages[index]``: an AI message with the tool results that follow it
    (a tool result's unit starts at its AI message), or the message alone."""
    start = index
    if isinstance(messages[index], ToolMessage):
        while start > 0 and not isinstance(messages[start], AIMessage):
            start -= 1
        if not isinstance(messages[start], AIMessage):
            start = index
    end = index + 1
    if isinstance(messages[start], AIMessage) or isinstance(messages[index], ToolMessage):
        while end < len(messages) and isinstance(messages[end], ToolMessage):
            end += 1
    return start, end


class ArrivalForms:
    """``arrival``: each turn unit compacted as the trailing, unanswered part of a request, remembered
    by the identity of the unit's messages (the same objects come back on every call)."""

    def __init__(self, *, config: CompressionConfig, store: ResultStore, profile: TokenProfile) -> None:
        self.config, self.store, self.profile = config, store, profile
        self._units: LRU[tuple[int, ...], tuple[list[BaseMessage], CompactionResult]] = LRU(UNIT_SLOTS)

    def _compacted(self, unit: list[BaseMessage]) -> tuple[CompactionResult, bool]:
        """The unit compacted, and whether that was done now (its files are then new to report). A
        unit whose file could not be written is not remembered: the next call tries again."""
        key = tuple(id(m) for m in unit)
        found = self._units.get(key)
        if found is not None:
            return found[1], False
        result = compact_messages(unit, config=self.config, store=self.store, profile=self.profile)
        if not result.failed:
            self._units.put(key, (unit, result))  # the unit is held, so its ids stay unique
        return result, True

    def arrival(self, messages: Sequence[BaseMessage], start: int) -> Arrival:
        out = Arrival()
        index = start
        while index < len(messages):
            first, end = _unit(messages, index)
            unit = list(messages[first:end])
            if isinstance(unit[0], AIMessage) or len(unit) > 1:
                result, now = self._compacted(unit)
                out.forms.extend(result.messages[index - first :])
                if now:
                    kept = {m.tool_call_id for m in messages[index:end] if isinstance(m, ToolMessage)}
                    out.saved.extend(r for r in result.saved if r.tool_call_id in kept)
                    out.failed.extend(r for r in result.failed if r.tool_call_id in kept)
            else:
                out.forms.append(messages[index])  # a user's message: as it came, until it is answered
            index = end
        return out


def low_water_count(
    compacted: Sequence[int], arrival: Sequence[int], *, start: int, limit: int, base: int, target: int
) -> int:
    """The fewest messages, from ``start`` up to ``limit``, to show compacted so that the request is at
    most ``target`` tokens: ``base`` (its fixed part) plus ``compacted[:count]`` and ``arrival`` (the
    forms of the messages from ``start`` on) for the rest. ``limit`` when even that is not enough."""
    size = base + sum(compacted[:start]) + sum(arrival)
    for count in range(start, limit):
        if size <= target:
            return count
        size += compacted[count] - arrival[count - start]
    return limit


def horizon_view(
    compacted: Sequence[BaseMessage],
    raw: Sequence[BaseMessage],
    arrival: Sequence[BaseMessage],
    *,
    count: int,
    since: int,
) -> list[BaseMessage]:
    """``compacted[:count]``; then, up to ``since``, the messages as they first went out (raw, below
    ``T``); then the arrival forms (``arrival`` holds those of ``raw[since:]``)."""
    return [*compacted[:count], *raw[count:since], *arrival[max(count, since) - since :]]
