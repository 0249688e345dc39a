"""The reference index that follows every summary (issue 25): the identifiers of the folded messages that
the summary and the kept messages lack, grouped by kind, most used then most recent first, each with the
line of the history file where it was last seen; bounded by a token budget, saying how many it left out
and in which lines. Deterministic and pure: no model call, no store.

Invariants (``tests/context_engine/summary/test_reference_index.py``): the index never exceeds its
budget; every pointer names a line that holds its identifier; it lists only identifiers that are neither
in the summary nor in the kept messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from context_engine.formats import (
    REFERENCE_INDEX_ENTRY,
    REFERENCE_INDEX_FOOTER,
    REFERENCE_INDEX_HEADER,
    REFERENCE_INDEX_KIND_LINE,
    REFERENCE_INDEX_OMITTED,
    REFERENCE_INDEX_OMITTED_RANGE,
)
from context_engine.lines import READ_DEFAULT_LIMIT, READ_MAX_CHARS, LineIndex, split_lines
from context_engine.summary.identifiers import KIND_EMAIL, KIND_HASH, KIND_URL, KIND_UUID, Haystack
from context_engine.tokens.messages import DEFAULT_PROFILE, TokenProfile, estimate_text

OMITTED_RANGES_MAX = 3  # line ranges the index names for what it left out, each one read_file call
_ROW_OVERHEAD = 16  # read_file's line-number column and line break, with room for continuation rows
_CASELESS = frozenset({KIND_EMAIL, KIND_UUID, KIND_HASH, KIND_URL})


@dataclass(frozen=True)
class Entry:
    value: str
    kind: str
    line: int  # 1-based line of the history file holding ``value``


@dataclass(frozen=True)
class LineRange:
    start: int
    end: int
    count: int  # omitted identifiers last seen in these lines


@dataclass(frozen=True)
class ReferenceIndex:
    file_path: str | None = None
    entries: tuple[Entry, ...] = ()
    omitted: int = 0  # identifiers the index does not list (over budget, or not found on one line)
    ranges: tuple[LineRange, ...] = ()
    text: str = ""  # what the model reads after the summary; empty when there is no index
    tokens: int = 0
    # The text of the lines each range names: one read_file call away (what the loss report reaches).
    range_texts: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The index as the summary event carries it (the page links each entry to its line)."""
        return {
            "file_path": self.file_path,
            "entries": [{"value": e.value, "kind": e.kind, "line": e.line} for e in self.entries],
            "omitted": self.omitted,
            "ranges": [{"start": r.start, "end": r.end, "count": r.count} for r in self.ranges],
            "tokens": self.tokens,
        }


NO_INDEX = ReferenceIndex()


def index_entries(value: Any) -> list[dict[str, Any]]:
    """The entries of an index as an event carries it; garbage reads as none."""
    entries = value.get("entries") if isinstance(value, Mapping) else None
    if not isinstance(entries, list):
        return []
    return [
        {"value": str(e["value"]), "kind": str(e.get("kind", "")), "line": e["line"]}
        for e in entries
        if isinstance(e, Mapping) and isinstance(e.get("line"), int) and e.get("value")
    ]


@dataclass(frozen=True)
class _Located:
    value: str
    kind: str
    offset: int  # of its last appearance in the section
    uses: int


def build_reference_index(
    identifiers: Mapping[str, str],
    *,
    summary: str,
    kept: Iterable[str],
    section: str,
    first_line: int,
    file_path: str,
    budget: int,
    profile: TokenProfile = DEFAULT_PROFILE,
) -> ReferenceIndex:
    """The index of ``identifiers`` (value → kind, from the folded messages) for a summary ``summary``
    and kept message texts ``kept``; ``section`` is the history section the fold was appended as, its
    first line being line ``first_line`` of ``file_path``. ``budget`` tokens at most (0: no index)."""
    if budget <= 0 or not identifiers:
        return NO_INDEX
    in_summary, in_kept = Haystack([summary]), Haystack(kept)
    missing = [(v, k) for v, k in identifiers.items() if (v, k) not in in_summary and (v, k) not in in_kept]
    if not missing:
        return NO_INDEX
    located, unlocated = _locate(missing, section)
    lines = LineIndex(section)
    ranked = [
        Entry(item.value, item.kind, first_line + lines.line_of(item.offset) - 1)
        for item in sorted(located, key=lambda item: (-item.uses, -item.offset))
    ]
    section_lines = split_lines(section)

    def render(count: int) -> tuple[str, tuple[LineRange, ...]]:
        ranges = _omitted_ranges(ranked[count:], section_lines, first_line)
        return _render(ranked[:count], len(ranked) - count + unlocated, ranges, file_path), ranges

    # The text grows with the number of entries listed: the most that fit, by bisection.
    low, high = 0, len(ranked)
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_text(render(middle)[0], profile) <= budget:
            low = middle
        else:
            high = middle - 1
    text, ranges = render(low)
    tokens = estimate_text(text, profile)
    if tokens > budget:  # not even the header fits: no index
        return NO_INDEX
    return ReferenceIndex(
        file_path=file_path,
        entries=tuple(ranked[:low]),
        omitted=len(ranked) - low + unlocated,
        ranges=ranges,
        text=text,
        tokens=tokens,
        range_texts=tuple(
            "\n".join(section_lines[r.start - first_line : r.end - first_line + 1]) for r in ranges
        ),
    )


def _locate(missing: list[tuple[str, str]], section: str) -> tuple[list[_Located], int]:
    """Where each identifier was last seen in ``section``, and how often; the number not found whole on
    one line (an identifier the extractor joined across a line break)."""
    lowered: str | None = None
    located: list[_Located] = []
    unlocated = 0
    for value, kind in missing:
        haystack, needle = section, value
        offset = section.rfind(value)
        if offset < 0 and kind in _CASELESS:
            lowered = section.lower() if lowered is None else lowered
            haystack, needle = lowered, value.lower()
            offset = lowered.rfind(needle)
        if offset < 0 or "\n" in value:
            unlocated += 1
            continue
        located.append(_Located(value, kind, offset, haystack.count(needle)))
    return located, unlocated


def _omitted_ranges(omitted: list[Entry], section_lines: list[str], first_line: int) -> tuple[LineRange, ...]:
    """Up to ``OMITTED_RANGES_MAX`` line ranges, each returned whole by one ``read_file`` call, that hold
    the most of the omitted identifiers' lines."""
    if not omitted:
        return ()
    counts: dict[int, int] = {}
    for entry in omitted:
        counts[entry.line] = counts.get(entry.line, 0) + 1
    ranges: list[LineRange] = []
    start = end = None
    chars = count = 0
    for line in sorted(counts):
        size = sum(
            len(section_lines[n - first_line]) + _ROW_OVERHEAD for n in range((end or line - 1) + 1, line + 1)
        )
        if start is not None and line - start + 1 <= READ_DEFAULT_LIMIT and chars + size <= READ_MAX_CHARS:
            end, chars, count = line, chars + size, count + counts[line]
            continue
        if start is not None:
            ranges.append(LineRange(start, end, count))
        start = end = line
        chars, count = len(section_lines[line - first_line]) + _ROW_OVERHEAD, counts[line]
    ranges.append(LineRange(start, end, count))
    best = sorted(ranges, key=lambda r: -r.count)[:OMITTED_RANGES_MAX]
    return tuple(sorted(best, key=lambda r: r.start))


def _render(entries: list[Entry], omitted: int, ranges: tuple[LineRange, ...], file_path: str) -> str:
    rows = [REFERENCE_INDEX_HEADER.format(file_path=file_path)]
    by_kind: dict[str, list[Entry]] = {}
    for entry in entries:  # kinds in the order of their best entry
        by_kind.setdefault(entry.kind, []).append(entry)
    for kind, group in by_kind.items():
        rows.append(REFERENCE_INDEX_KIND_LINE.format(kind=kind))
        rows.extend(REFERENCE_INDEX_ENTRY.format(value=e.value, line=e.line) for e in group)
    if omitted:
        rows.append(REFERENCE_INDEX_OMITTED.format(count=omitted, file_path=file_path))
        rows.extend(
            REFERENCE_INDEX_OMITTED_RANGE.format(
                count=r.count, start=r.start, end=r.end, offset=r.start - 1, limit=r.end - r.start + 1
            )
            for r in ranges
        )
    rows.append(REFERENCE_INDEX_FOOTER)
    return "\n".join(rows)
