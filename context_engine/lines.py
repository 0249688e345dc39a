"""What a line of a workdir file is, and how much one ``read_file`` call returns: one definition for the
reference index's pointers, ``read_file``, ``search_history`` and the file view, so ``path:L412`` names
the same line everywhere. Lines are split on ``\\n`` only (a ``\\r`` or ``\\u2028`` in a verbatim text
never shifts a number), and history files are only appended to, so a line number never moves."""

from __future__ import annotations

import re

LINE_BREAK = "\n"
READ_DEFAULT_LIMIT = 2000  # lines one read_file call returns by default
READ_MAX_CHARS = 100_000  # characters one read_file call returns at most
POINTER_TEMPLATE = "{path}:L{line}"
# A row of a long line, as read_file numbers its continuation rows: ``path:L412.3``.
ROW_POINTER_TEMPLATE = "{path}:L{line}.{part}"
_POINTER = re.compile(r"^(?P<path>.+):L(?P<line>[1-9][0-9]{0,8})(?:\.(?P<part>[1-9][0-9]{0,8}))?$")


def split_lines(text: str) -> list[str]:
    """The lines of ``text``; a final line break ends the last line, it does not start another."""
    lines = text.split(LINE_BREAK)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def next_line_number(text: str) -> int:
    """The number of the line where text appended to ``text`` begins (1 for an empty file). A file that
    does not end with a line break continues its last line, so the appended text starts there."""
    return text.count(LINE_BREAK) + 1


def pointer(path: str, line: int) -> str:
    """``path:L<line>`` (1-based)."""
    return POINTER_TEMPLATE.format(path=path, line=line)


def row_pointer(path: str, line: int, part: int) -> str:
    """``path:L<line>.<part>``: continuation row ``part`` (1-based) of a long line."""
    return ROW_POINTER_TEMPLATE.format(path=path, line=line, part=part)


def parse_row_pointer(value: str) -> tuple[str, int | None, int]:
    """``(path, line, part)`` for ``path:L<line>`` (part 0) or ``path:L<line>.<part>``; ``(value, None,
    0)`` for a plain path."""
    match = _POINTER.match(value)
    if match is None:
        return value, None, 0
    return match.group("path"), int(match.group("line")), int(match.group("part") or 0)


def parse_pointer(value: str) -> tuple[str, int | None]:
    """``(path, line)`` for ``path:L<line>``; ``(value, None)`` for a plain path (or a row pointer)."""
    path, line, part = parse_row_pointer(value)
    return (value, None) if part else (path, line)
