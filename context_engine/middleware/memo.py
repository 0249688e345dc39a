"""Warm-call memos: a call on a state that grew by a few messages only estimates (and compacts) the
new ones. The previous call's messages are recognised by identity (``is``, ~25 ns each), so a message
replaced by id (overflow clipping), or a new summary, starts over from the first changed index.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Generic, TypeVar

from langchain_core.messages import BaseMessage, ToolMessage

from context_engine.compaction.tool_results import (
    FailedToolResult,
    SavedToolResult,
    compact_messages,
    trailing_tool_batch_start,
)
from context_engine.config import CompressionConfig
from context_engine.lru import LRU
from context_engine.store import ResultStore
from context_engine.tokens.messages import TokenProfile, estimate_message

MEMO_SLOTS = 32  # conversations remembered per middleware instance

Entry = TypeVar("Entry")


def common_prefix(current: Sequence[Any], previous: Sequence[Any]) -> int:
    """Length of the longest prefix of ``current`` made of the very same objects as ``previous``."""
    size = min(len(current), len(previous))
    if all(map(operator.is_, current[:size], previous[:size])):
        return size
    return next(i for i in range(size) if current[i] is not previous[i])


class _Slots(Generic[Entry]):
    """An LRU keyed by the id of a list's first message (held alive by the entry, so ids stay unique
    while the entry lives)."""

    def __init__(self, size: int = MEMO_SLOTS) -> None:
        self._lru: LRU[int, Entry] = LRU(size)

    def get(self, messages: Sequence[BaseMessage]) -> Entry | None:
        return self._lru.get(id(messages[0])) if messages else None

    def put(self, messages: Sequence[BaseMessage], entry: Entry) -> None:
        if messages:
            self._lru.put(id(messages[0]), entry)


@dataclass(frozen=True)
class _SumEntry:
    refs: list[BaseMessage]
    sums: list[int]  # sums[i] = estimate of refs[: i + 1]


class MessageTotals:
    """``sum(estimate_message(m) for m in messages)``, reusing the previous call's running sums."""

    def __init__(self, profile: TokenProfile) -> None:
        self.profile = profile
        self._slots: _Slots[_SumEntry] = _Slots()

    def total(self, messages: Sequence[BaseMessage]) -> int:
        if not messages:
            return 0
        entry = self._slots.get(messages)
        start = common_prefix(messages, entry.refs) if entry else 0
        if entry is not None and start == len(messages) == len(entry.refs):
            return entry.sums[-1]
        kept = entry.sums[:start] if entry is not None else []  # empty when start is 0
        base = kept[-1] if kept else 0
        profile = self.profile
        fresh = list(accumulate((estimate_message(m, profile) for m in messages[start:]), initial=base))
        sums = [*kept, *fresh[1:]]
        self._slots.put(messages, _SumEntry(list(messages), sums))
        return sums[-1]


@dataclass(frozen=True)
class Compacted:
    messages: list[BaseMessage]  # the view: same order, ids and tool_call_ids as the input
    saved: tuple[SavedToolResult, ...]
    failed: tuple[FailedToolResult, ...]
    changed: bool
    # This call wrote a file (or failed to): a new compaction, not the same receipts shown again.
    fresh: bool = True


@dataclass(frozen=True)
class _CompactionEntry:
    refs: list[BaseMessage]
    view: list[BaseMessage]
    records: list[SavedToolResult | FailedToolResult | None]  # per input index
    first_failed: int | None
    unseen_from: int  # the trailing tool batch, compacted again once the model has seen it


class CompactionMemo:
    """``compact_messages`` that only compacts what follows the unchanged prefix of the previous call.

    A message whose file could not be written is retried on the next call (the reused prefix ends
    before it).
    """

    def __init__(self, *, config: CompressionConfig, store: ResultStore, profile: TokenProfile) -> None:
        self.config, self.store, self.profile = config, store, profile
        self._slots: _Slots[_CompactionEntry] = _Slots()

    def compact(self, messages: Sequence[BaseMessage]) -> Compacted:
        entry = self._slots.get(messages)
        start = common_prefix(messages, entry.refs) if entry else 0
        if entry is not None:
            start = min(start, entry.unseen_from)
            if entry.first_failed is not None:
                start = min(start, entry.first_failed)
        # Start the suffix on its tool calls' AIMessage, so its tool results know their tool names.
        while 0 < start < len(messages) and isinstance(messages[start], ToolMessage):
            start -= 1
        suffix = messages[start:]
        result = compact_messages(suffix, config=self.config, store=self.store, profile=self.profile)
        records: list[SavedToolResult | FailedToolResult | None] = [None] * len(suffix)
        if result.saved or result.failed:
            where = {m.tool_call_id: i for i, m in enumerate(suffix) if isinstance(m, ToolMessage)}
            found: tuple[SavedToolResult | FailedToolResult, ...] = (*result.saved, *result.failed)
            for record in found:
                index = where.get(record.tool_call_id)
                if index is not None:
                    records[index] = record
        if start and entry is not None:
            view = [*entry.view[:start], *result.messages]
            records = [*entry.records[:start], *records]
        else:
            view = list(result.messages)
        first_failed = next((i for i, r in enumerate(records) if isinstance(r, FailedToolResult)), None)
        entry = _CompactionEntry(
            list(messages), view, records, first_failed, trailing_tool_batch_start(messages)
        )
        self._slots.put(messages, entry)
        changed = not all(map(operator.is_, view, messages))
        return Compacted(
            view if changed else list(messages),
            tuple(r for r in records if isinstance(r, SavedToolResult)),
            tuple(r for r in records if isinstance(r, FailedToolResult)),
            changed,
            fresh=any(r.written for r in result.saved)
            or any(m.written for m in result.media)
            or bool(result.failed or result.media_failed),
        )
