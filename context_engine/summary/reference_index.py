"""The reference index that follows every summary (issue 25): the identifiers of the folded messages, and
of the tool results saved from them, that the summary and the kept messages lack; by file and kind, most
used then most recent first, each with the line of the file (the history section just appended, or the
saved result) where it was last seen; bounded by a token budget, saying how many it left out and which
lines hold most of them. Deterministic and pure: no model call, no store.

Invariants (``tests/context_engine/summary/test_reference_index.py``): the index never exceeds its
budget; every pointer names a line that holds its identifier; it lists only identifiers that are neither
in the summary nor in the kept messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, NamedTuple

from context_engine.formats import (
    REFERENCE_INDEX_ENTRY,
    REFERENCE_INDEX_FILE_LINE,
    REFERENCE_INDEX_FOOTER,
    REFERENCE_INDEX_HEADER,
    REFERENCE_INDEX_KIND_LINE,
    REFERENCE_INDEX_OMITTED,
    REFERENCE_INDEX_OMITTED_RANGE,
)
from context_engine.lines import READ_DEFAULT_LIMIT, READ_MAX_CHARS, split_lines
from context_engine.lru import LRU
from context_engine.summary.identifiers import Haystack, line_identifiers, text_digest
from context_engine.summary.rendering import transcript_line_text

OMITTED_RANGES_MAX = 10  # line ranges the index names for what it left out, each one read_file call
_ROW_OVERHEAD = 16  # read_file's line-number column and line break, with room for continuation rows


@dataclass(frozen=True)
class Source:
    """A file the index points into: its path, the text it holds (for the history file: the section
    appended by this summary) and the number of that text's first line in the file."""

    path: str
    text: str
    first_line: int = 1
    transcript: bool = False  # a rendered transcript (the history section): its lines are read unframed


@dataclass(frozen=True)
class Entry:
    value: str
    kind: str
    path: str
    line: int  # 1-based line of ``path`` holding ``value``


@dataclass(frozen=True)
class LineRange:
    path: str
    start: int
    end: int
    count: int  # omitted identifiers last seen in these lines


@dataclass(frozen=True)
class ReferenceIndex:
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
            "entries": [
                {"value": e.value, "kind": e.kind, "path": e.path, "line": e.line} for e in self.entries
            ],
            "omitted": self.omitted,
            "ranges": [
                {"path": r.path, "start": r.start, "end": r.end, "count": r.count} for r in self.ranges
            ],
            "tokens": self.tokens,
        }


NO_INDEX = ReferenceIndex()


@dataclass(frozen=True)
class _Seen:
    value: str
    kind: str
    path: str
    line: int  # last line holding it, in its file's numbering
    rank: tuple[int, int]  # (1 for the history section, else 0; line index): the conversation's own first
    uses: int


# Identifiers per line of a text (by its digest): a repair pass or a preview locates what was just located.
_located: LRU[tuple[bool, bytes], list[tuple[int, dict[str, str]]]] = LRU(256)


def clear_cache() -> None:
    _located.clear()


def _line_identifiers(text: str, *, framed: bool) -> list[tuple[int, dict[str, str]]]:
    """``(line index, identifiers on that line)`` for the lines of ``text`` that hold any. Extracted line
    by line (``line_identifiers``, cached per line: a history section and the saved results it folded
    share many lines, and the loss report read them already), so an identifier found here is on that
    line whole. ``framed``: ``text`` is a rendered transcript (the history section), whose lines are read
    without the frame our templates put around the conversation's text."""
    key = (framed, text_digest(text))
    found = _located.get(key)
    if found is None:
        found = []
        for n, line in enumerate(split_lines(text)):
            ids = line_identifiers(transcript_line_text(line) if framed else line)
            if ids:
                found.append((n, ids))
        _located.put(key, found)
    return found


def _locate(wanted: Mapping[str, str], sources: Sequence[Source]) -> dict[str, _Seen]:
    seen: dict[str, _Seen] = {}
    for number, source in enumerate(sources):
        for index, ids in _line_identifiers(source.text, framed=source.transcript):
            for value in ids:
                if value not in wanted:
                    continue
                before = seen.get(value)
                if before is not None and before.path != source.path:  # first file holding it keeps it
                    seen[value] = _Seen(
                        value, before.kind, before.path, before.line, before.rank, before.uses + 1
                    )
                    continue
                uses = before.uses + 1 if before else 1
                line = source.first_line + index
                seen[value] = _Seen(value, wanted[value], source.path, line, (int(number == 0), index), uses)
    return seen


def build_reference_index(
    identifiers: Mapping[str, str],
    *,
    summary: str,
    kept: Iterable[str],
    sources: Sequence[Source],
    budget: int,
    estimate: Any,
    carried: Sequence[Entry] = (),
) -> ReferenceIndex:
    """The index of ``identifiers`` (value → kind: the folded messages', and their saved results') for a
    summary ``summary`` and kept message texts ``kept``, pointing into ``sources`` (the history section
    first). ``carried``: the earlier summary's entries (it is folded into this one): those this summary
    and the kept messages still lack stay listed with their pointers (the history file is only appended
    to, so their lines hold), after this fold's own, within the same budget. ``estimate`` measures a text
    in tokens; the index takes at most ``budget`` (0: no index)."""
    if budget <= 0 or not (identifiers or carried):
        return NO_INDEX
    listed = _ranked(identifiers, summary=summary, kept=kept, sources=sources, carried=carried)
    if listed is None:
        return NO_INDEX
    return _fitted(*listed, sources=sources, budget=budget, estimate=estimate)


def _ranked(
    identifiers: Mapping[str, str],
    *,
    summary: str,
    kept: Iterable[str],
    sources: Sequence[Source],
    carried: Sequence[Entry],
) -> tuple[list[Entry], int] | None:
    """The entries to list, most used first (this fold's own, then the carried ones), and how many
    lacked identifiers were found in no source; None when nothing is lacked."""
    in_summary, in_kept = Haystack([summary]), Haystack(kept)

    def lacked(value: str, kind: str) -> bool:
        return (value, kind) not in in_summary and (value, kind) not in in_kept

    missing = {v: k for v, k in identifiers.items() if lacked(v, k)}
    seen = _locate(missing, sources)
    for position, entry in enumerate(carried):  # after this fold's own, in the earlier index's order
        if entry.value not in seen and lacked(entry.value, entry.kind):
            seen[entry.value] = _Seen(entry.value, entry.kind, entry.path, entry.line, (0, -1 - position), 1)
    if not seen and not missing:
        return None
    ranked = [
        Entry(s.value, s.kind, s.path, s.line)
        for s in sorted(seen.values(), key=lambda s: (-s.uses, -s.rank[0], -s.rank[1]))
    ]
    return ranked, len(missing.keys() - seen.keys())


def _fitted(
    ranked: list[Entry], unlocated: int, *, sources: Sequence[Source], budget: int, estimate: Any
) -> ReferenceIndex:
    """The index listing the most of ``ranked`` that fit ``budget`` (by bisection: the text grows with
    the number of entries listed), or no index when not even its header fits."""
    lines = {source.path: _File.of(source) for source in sources}

    def render(count: int) -> tuple[str, tuple[LineRange, ...]]:
        ranges = _omitted_ranges([e for e in ranked[count:] if _in_sources(e, lines)], lines)
        return _render(ranked[:count], len(ranked) - count + unlocated, ranges), ranges

    low, high = 0, len(ranked)
    while low < high:
        middle = (low + high + 1) // 2
        if estimate(render(middle)[0]) <= budget:
            low = middle
        else:
            high = middle - 1
    text, ranges = render(low)
    tokens = estimate(text)
    if tokens > budget:
        return NO_INDEX
    return ReferenceIndex(
        entries=tuple(ranked[:low]),
        omitted=len(ranked) - low + unlocated,
        ranges=ranges,
        text=text,
        tokens=tokens,
        range_texts=tuple(
            "\n".join(lines[r.path][0][r.start - lines[r.path][1] : r.end - lines[r.path][1] + 1])
            for r in ranges
        ),
    )


def _in_sources(entry: Entry, lines: Mapping[str, _File]) -> bool:
    """Does ``entry`` point into the text this index was built from (a carried entry may not)?"""
    file = lines.get(entry.path)
    return file is not None and file.first <= entry.line < file.first + len(file.text_lines)


class _File(NamedTuple):
    text_lines: list[str]
    first: int  # the number of its first line
    # ``sizes[i]``: the characters a ``read_file`` of its first ``i`` lines returns (one sum, not one
    # per range tried: the bisection above sizes the omitted ranges a dozen times).
    sizes: list[int]

    @classmethod
    def of(cls, source: Source) -> _File:
        text_lines = split_lines(source.text)
        return cls(
            text_lines,
            source.first_line,
            list(accumulate((len(t) + _ROW_OVERHEAD for t in text_lines), initial=0)),
        )


def _omitted_ranges(omitted: list[Entry], lines: Mapping[str, _File]) -> tuple[LineRange, ...]:
    """Up to ``OMITTED_RANGES_MAX`` line ranges, each returned whole by one ``read_file`` call, that hold
    the most of the omitted identifiers."""
    counts: dict[str, dict[int, int]] = {}
    for entry in omitted:
        per_file = counts.setdefault(entry.path, {})
        per_file[entry.line] = per_file.get(entry.line, 0) + 1
    ranges: list[LineRange] = []
    for path, per_line in counts.items():
        text_lines, first, sizes = lines[path]
        start = end = 0
        chars = count = 0
        for line in sorted(per_line):
            if start:
                size = sizes[line + 1 - first] - sizes[end + 1 - first]  # lines end + 1 .. line
                if line - start + 1 <= READ_DEFAULT_LIMIT and chars + size <= READ_MAX_CHARS:
                    end, chars, count = line, chars + size, count + per_line[line]
                    continue
                ranges.append(LineRange(path, start, end, count))
            start = end = line
            chars, count = len(text_lines[line - first]) + _ROW_OVERHEAD, per_line[line]
        ranges.append(LineRange(path, start, end, count))
    best = sorted(ranges, key=lambda r: -r.count)[:OMITTED_RANGES_MAX]
    return tuple(sorted(best, key=lambda r: (r.path, r.start)))


def _render(entries: list[Entry], omitted: int, ranges: tuple[LineRange, ...]) -> str:
    rows = [REFERENCE_INDEX_HEADER]
    by_file: dict[str, dict[str, list[Entry]]] = {}
    for entry in entries:  # files, then kinds, in the order of their best entry
        by_file.setdefault(entry.path, {}).setdefault(entry.kind, []).append(entry)
    for path, by_kind in by_file.items():
        rows.append(REFERENCE_INDEX_FILE_LINE.format(path=path))
        for kind, group in by_kind.items():
            rows.append(REFERENCE_INDEX_KIND_LINE.format(kind=kind))
            rows.extend(REFERENCE_INDEX_ENTRY.format(value=e.value, line=e.line) for e in group)
    if omitted:
        rows.append(REFERENCE_INDEX_OMITTED.format(count=omitted))
        rows.extend(
            REFERENCE_INDEX_OMITTED_RANGE.format(
                count=r.count,
                path=r.path,
                start=r.start,
                end=r.end,
                offset=r.start - 1,
                limit=r.end - r.start + 1,
            )
            for r in ranges
        )
    rows.append(REFERENCE_INDEX_FOOTER)
    return "\n".join(rows)


def carried_entries(value: Any) -> tuple[Entry, ...]:
    """The entries of an earlier summary's index (as its event carries it), to carry forward."""
    return tuple(Entry(e["value"], e["kind"], e["path"], e["line"]) for e in index_entries(value))


def index_entries(value: Any) -> list[dict[str, Any]]:
    """The entries of an index as an event carries it; garbage reads as none."""
    entries = value.get("entries") if isinstance(value, Mapping) else None
    if not isinstance(entries, list):
        return []
    return [
        {"value": str(e["value"]), "kind": str(e.get("kind", "")), "path": str(e["path"]), "line": e["line"]}
        for e in entries
        if isinstance(e, Mapping) and isinstance(e.get("line"), int) and e.get("value") and e.get("path")
    ]
