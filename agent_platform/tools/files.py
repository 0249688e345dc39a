"""Workdir file tools: ``ls``, ``read_file``, ``write_file``, ``edit_file``, confined to one thread's workdir.

Every failure (a rejected path, a missing file, an ambiguous edit) comes back as an ``Error: ...``
string the model can act on, naming only virtual paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from langchain_core.tools import BaseTool, tool

from agent_platform.workdir import Workdir, resolve
from context_engine.config import CompressionConfig
from context_engine.errors import StoreError
from context_engine.formats import (
    CONVERSATION_HISTORY_DIR,
    LARGE_TOOL_RESULTS_DIR,
    READ_MORE_IN_LINE_TEMPLATE,
    READ_MORE_TEMPLATE,
    READ_PART_LABEL,
    READ_ROW_TEMPLATE,
)
from context_engine.lines import (
    READ_DEFAULT_LIMIT,
    READ_MAX_CHARS,
    parse_row_pointer,
    row_pointer,
    split_lines,
)
from context_engine.tokens.messages import DEFAULT_PROFILE, TokenProfile
from context_engine.tokens.text import estimate_text

READ_MAX_LINE_CHARS = 2000  # longer lines are shown as continuation rows N.1, N.2, ...
MIN_ROW_CHARS = 80  # however small a page, its rows are at least this wide
# Saved tool results and history are the byte-exact record of what compression replaced.
READ_ONLY_DIRS = (LARGE_TOOL_RESULTS_DIR, CONVERSATION_HISTORY_DIR)


@dataclass(frozen=True)
class PageSize:
    """How much one ``read_file`` call returns: at most ``tokens`` by the agent's estimator (``profile``;
    None: only ``READ_MAX_CHARS``), in rows at most ``row_chars`` wide (a long line's continuation rows
    ``N.1``, ``N.2``... are narrower on a small page, so one always fits)."""

    tokens: int | None = None
    profile: TokenProfile = DEFAULT_PROFILE

    @classmethod
    def for_config(cls, config: CompressionConfig) -> PageSize:
        """A page inside a fresh tool result's share of the agent's window (``fresh_result_cap``)."""
        return cls(config.read_page_tokens, config.profile)

    @property
    def row_chars(self) -> int:
        if self.tokens is None:
            return READ_MAX_LINE_CHARS
        return min(max(self.tokens // 2, MIN_ROW_CHARS), READ_MAX_LINE_CHARS)

    def fits(self, text: str) -> bool:
        return self.tokens is None or estimate_text(text, self.profile) <= self.tokens


@dataclass(frozen=True)
class _Row:
    line: int  # 1-based
    part: int  # 0: the line's first row; k: its continuation row N.k
    parts: int  # the line's rows in all
    text: str

    def render(self) -> str:
        label = str(self.line) if not self.part else READ_PART_LABEL.format(line=self.line, part=self.part)
        return READ_ROW_TEMPLATE.format(label=label, text=self.text)


def _error(message: str) -> str:
    return f"Error: {message}"


def _check_writable(name: str) -> str | None:
    for directory in READ_ONLY_DIRS:
        if name == directory or name.startswith(directory + "/"):
            return f"{directory}/ is read-only: it keeps the saved originals. Write elsewhere, e.g. notes/."
    return None


def _rows(lines: list[str], *, offset: int, part: int, limit: int, width: int) -> Iterator[_Row]:
    """The rows of lines ``offset + 1`` onwards (from row ``part`` of the first), at most ``limit`` lines."""
    for number, line in enumerate(lines[offset : offset + limit], start=offset + 1):
        segments = [line[i : i + width] for i in range(0, len(line), width)] or [""]
        for k in range(part if number == offset + 1 else 0, len(segments)):
            yield _Row(number, k, len(segments), segments[k])


def _page(rows: list[_Row], *, total: int, path: str) -> str:
    """``rows`` and, when the file goes on after them, how to read the next page."""
    text = "\n".join(row.render() for row in rows)
    first, last = rows[0], rows[-1]
    first_label = (
        str(first.line) if not first.part else READ_PART_LABEL.format(line=first.line, part=first.part)
    )
    if last.part + 1 < last.parts:
        pointer = row_pointer(path, last.line, last.part + 1)
        footer = READ_MORE_IN_LINE_TEMPLATE.format(
            first=first_label, last=last.line, total=total, pointer=pointer
        )
    elif last.line < total:
        footer = READ_MORE_TEMPLATE.format(first=first_label, last=last.line, total=total)
    else:
        return text
    return f"{text}\n{footer}"


def _within_chars(rows: Iterator[_Row]) -> list[_Row]:
    kept: list[_Row] = []
    size = 0
    for row in rows:
        row_size = len(row.render()) + 1
        if kept and size + row_size > READ_MAX_CHARS:
            break
        kept.append(row)
        size += row_size
    return kept


def format_lines(
    text: str,
    *,
    offset: int = 0,
    limit: int = READ_DEFAULT_LIMIT,
    part: int = 0,
    page: PageSize | None = None,
    path: str = "",
) -> str:
    """``cat -n``-style numbered rows of lines ``offset`` (0-based) onwards, at most ``limit`` lines, from
    continuation row ``part`` of the first: one page, at most ``READ_MAX_CHARS`` characters and, with a
    ``page`` size, at most its tokens (the most rows that fit, at least one), ending with how to read the
    next page of ``path`` when there is more."""
    lines = split_lines(text)
    total = len(lines)
    if total == 0:
        return "(the file is empty)"
    if offset < 0 or limit < 1:
        return _error("offset must be 0 or more and limit 1 or more.")
    if offset >= total:
        return _error(f"offset {offset} is past the end of the file ({total} lines).")
    size = page or PageSize()
    if part and part >= -(-len(lines[offset]) // size.row_chars):
        return _error(f"line {offset + 1} has no row {offset + 1}.{part}.")
    rows = _within_chars(_rows(lines, offset=offset, part=part, limit=limit, width=size.row_chars))
    low, high = 1, len(rows)  # the most rows whose page fits, by bisection (at least one)
    while low < high:
        middle = (low + high + 1) // 2
        if size.fits(_page(rows[:middle], total=total, path=path)):
            low = middle
        else:
            high = middle - 1
    return _page(rows[:low], total=total, path=path)


# What each tool does, apart from the closure that binds it to one workdir: the tools below carry only
# the docstrings and signatures the model reads.
def _list(workdir: Workdir, path: str) -> str:
    try:
        entries = workdir.list_dir(path)
    except StoreError as exc:
        return _error(str(exc))
    return "\n".join(entries) if entries else f"(no files in {resolve(path) or '.'})"


def _read(workdir: Workdir, *, path: str, offset: int, limit: int, page: PageSize) -> str:
    path, line, part = parse_row_pointer(path) if isinstance(path, str) else (path, None, 0)
    if line is None or offset != 0:
        part = 0
    else:
        offset = line - 1
    try:
        text = workdir.read_text(path)
    except StoreError as exc:
        return _error(str(exc))
    return format_lines(text, offset=offset, limit=limit, part=part, page=page, path=resolve(path))


def _write_new(workdir: Workdir, *, path: str, content: str) -> str:
    try:
        name = resolve(path)
        if not name:
            return _error("give a file path, not the workdir root.")
        if problem := _check_writable(name):
            return _error(problem)
        if workdir.exists(name):
            return _error(f"{name} already exists. Read it and use edit_file, or write to a new path.")
        workdir.write_text(name, content)
    except StoreError as exc:
        return _error(str(exc))
    return f"Wrote {name} ({len(content.splitlines()) or 1} lines)."


def _edit(workdir: Workdir, *, path: str, old_string: str, new_string: str, replace_all: bool) -> str:
    try:
        name = resolve(path)
        if problem := _check_writable(name):
            return _error(problem)
        count = workdir.edit_text(name, old_string, new_string, replace_all=replace_all)
    except StoreError as exc:
        return _error(str(exc))
    return f"Edited {name}: replaced {count} occurrence{'s' if count != 1 else ''}."


def build_file_tools(workdir: Workdir, *, page: PageSize | None = None) -> dict[str, BaseTool]:
    """The file tools on ``workdir``; ``read_file`` answers pages of ``page`` (by default only the
    character cap: ``PageSize.for_config`` sizes them to an agent's window)."""
    page = page or PageSize()

    @tool("ls", parse_docstring=True)
    def ls(path: str = ".") -> str:
        """List the files and directories in the thread's workdir. Directories end with '/'.

        Args:
            path: A directory relative to the workdir, e.g. "." or "outputs/large_tool_results".
        """
        return _list(workdir, path)

    @tool("read_file", parse_docstring=True)
    def read_file(path: str, offset: int = 0, limit: int = READ_DEFAULT_LIMIT) -> str:
        """Read a text file from the workdir, with line numbers, a page at a time (the last line says
        how to read on). Use offset and limit to page through long files, such as saved tool results. A
        pointer "path:L412" reads from line 412.

        Args:
            path: A file relative to the workdir, e.g. "outputs/large_tool_results/query_kb-0123abcd.txt",
                or a pointer to one of its lines, e.g. "outputs/conversation_history/session_x.md:L412".
            offset: The first line to read, counting from 0 (a pointer's line is used when this is 0).
            limit: The most lines to return.
        """
        return _read(workdir, path=path, offset=offset, limit=limit, page=page)

    @tool("write_file", parse_docstring=True)
    def write_file(path: str, content: str) -> str:
        """Create a new text file in the workdir. To change an existing file, use edit_file.

        Args:
            path: A new file relative to the workdir, e.g. "notes/plan.md".
            content: The full text of the file.
        """
        return _write_new(workdir, path=path, content=content)

    @tool("edit_file", parse_docstring=True)
    def edit_file(path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
        """Replace exact text in a workdir file. old_string must match exactly once unless replace_all.

        Args:
            path: A file relative to the workdir.
            old_string: The exact text to replace (copy it from read_file, without the line numbers).
            new_string: The replacement text.
            replace_all: Replace every occurrence instead of exactly one.
        """
        return _edit(
            workdir, path=path, old_string=old_string, new_string=new_string, replace_all=replace_all
        )

    return {"ls": ls, "read_file": read_file, "write_file": write_file, "edit_file": edit_file}
