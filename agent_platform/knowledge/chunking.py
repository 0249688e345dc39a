"""Splitting document text into overlapping chunks at paragraph, sentence or word boundaries."""

from __future__ import annotations

import re
from dataclasses import dataclass

CHUNK_SIZE = 800
CHUNK_OVERLAP = 120

# Break preferences, strongest first: a blank line, a line end, a sentence end (Latin or CJK), a space.
_BREAKS = (
    re.compile(r"\n\s*\n"),
    re.compile(r"\n"),
    re.compile(r"[.!?;](?=\s)|[。！？；…]"),
    re.compile(r"[，、,:：]|\s"),
)
_SENTENCE_END = re.compile(r"[.!?;](?=\s)|[。！？；…\n]")
_WORD_END = re.compile(r"[\s，、,]")


@dataclass(frozen=True)
class TextChunk:
    index: int
    content: str
    start: int
    end: int


def chunk_text(text: str, *, size: int = CHUNK_SIZE, overlap: int = CHUNK_OVERLAP) -> list[TextChunk]:
    """Chunks of at most ``size`` characters; each starts about ``overlap`` characters before the last ended.

    Text without spaces (Chinese, Japanese) falls back to sentence punctuation, then to a hard cut.
    """
    if not 0 <= overlap < size // 2:
        raise ValueError("overlap must be at least 0 and less than half the chunk size")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    chunks: list[TextChunk] = []
    start = _skip_space(text, 0)
    while start < len(text):
        end = len(text) if len(text) - start <= size else _break_before(text, start, start + size)
        content = text[start:end].strip()
        if content:
            chunks.append(TextChunk(index=len(chunks), content=content, start=start, end=end))
        if end >= len(text):
            break
        start = max(_overlap_start(text, end - overlap, end), start + 1)
    return chunks


def _break_before(text: str, start: int, limit: int) -> int:
    """The best place to end a chunk in ``text[start:limit]``, not before its midpoint."""
    floor = start + (limit - start) // 2
    window = text[floor:limit]
    for pattern in _BREAKS:
        matches = list(pattern.finditer(window))
        if matches:
            return floor + matches[-1].end()
    return limit


def _overlap_start(text: str, start: int, end: int) -> int:
    """Move an overlap start forward to the next sentence start, else the next word start, if there is
    one before ``end``; text without either (a long CJK clause) keeps the exact start."""
    start = max(start, 0)
    for pattern in (_SENTENCE_END, _WORD_END):
        if start == 0 or pattern.match(text, start - 1):
            return _skip_space(text, start)
        found = pattern.search(text, start, end)
        if found and _skip_space(text, found.end()) < end:
            return _skip_space(text, found.end())
    return start


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position
