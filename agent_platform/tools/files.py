"""Workdir file tools: ``ls``, ``read_file``, ``write_file``, ``edit_file``, confined to one thread's workdir.

Every failure (a rejected path, a missing file, an ambiguous edit) comes back as an ``Error: ...``
string the model can act on, naming only virtual paths.
"""

from __future__ import annotations

from langchain_core.tools import BaseTool, tool

from agent_platform.workdir import Workdir, resolve
from context_engine.errors import StoreError
from context_engine.formats import CONVERSATION_HISTORY_DIR, LARGE_TOOL_RESULTS_DIR
from context_engine.lines import READ_DEFAULT_LIMIT, READ_MAX_CHARS, parse_pointer, split_lines

READ_MAX_LINE_CHARS = 2000  # longer lines are shown as continuation rows N.1, N.2, ...
# Saved tool results and history are the byte-exact record of what compression replaced.
READ_ONLY_DIRS = (LARGE_TOOL_RESULTS_DIR, CONVERSATION_HISTORY_DIR)


def _error(message: str) -> str:
    return f"Error: {message}"


def _check_writable(name: str) -> str | None:
    for directory in READ_ONLY_DIRS:
        if name == directory or name.startswith(directory + "/"):
            return f"{directory}/ is read-only: it keeps the saved originals. Write elsewhere, e.g. notes/."
    return None


def format_lines(text: str, *, offset: int = 0, limit: int = READ_DEFAULT_LIMIT) -> str:
    """``cat -n``-style numbered lines ``offset`` (0-based) onwards, at most ``limit`` of them."""
    lines = split_lines(text)
    total = len(lines)
    if total == 0:
        return "(the file is empty)"
    if offset < 0 or limit < 1:
        return _error("offset must be 0 or more and limit 1 or more.")
    if offset >= total:
        return _error(f"offset {offset} is past the end of the file ({total} lines).")
    rows: list[str] = []
    size = 0
    end = offset
    for number, line in enumerate(lines[offset : offset + limit], start=offset + 1):
        segments = [line[i : i + READ_MAX_LINE_CHARS] for i in range(0, len(line), READ_MAX_LINE_CHARS)]
        rendered = [f"{number:6d}\t{segments[0] if segments else ''}"]
        rendered += [f"{f'{number}.{i}':>6}\t{segment}" for i, segment in enumerate(segments[1:], start=1)]
        row_size = sum(len(row) + 1 for row in rendered)
        if rows and size + row_size > READ_MAX_CHARS:
            break
        rows.extend(rendered)
        size += row_size
        end = number
    if end < total:
        rows.append(
            f"(showing lines {offset + 1}-{end} of {total}; call read_file with offset={end} to read more)"
        )
    return "\n".join(rows)


# What each tool does, apart from the closure that binds it to one workdir: the tools below carry only
# the docstrings and signatures the model reads.
def _list(workdir: Workdir, path: str) -> str:
    try:
        entries = workdir.list_dir(path)
    except StoreError as exc:
        return _error(str(exc))
    return "\n".join(entries) if entries else f"(no files in {resolve(path) or '.'})"


def _read(workdir: Workdir, *, path: str, offset: int, limit: int) -> str:
    path, line = parse_pointer(path) if isinstance(path, str) else (path, None)
    if line is not None and offset == 0:
        offset = line - 1
    try:
        text = workdir.read_text(path)
    except StoreError as exc:
        return _error(str(exc))
    return format_lines(text, offset=offset, limit=limit)


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


def build_file_tools(workdir: Workdir) -> dict[str, BaseTool]:
    @tool("ls", parse_docstring=True)
    def ls(path: str = ".") -> str:
        """List the files and directories in the thread's workdir. Directories end with '/'.

        Args:
            path: A directory relative to the workdir, e.g. "." or "outputs/large_tool_results".
        """
        return _list(workdir, path)

    @tool("read_file", parse_docstring=True)
    def read_file(path: str, offset: int = 0, limit: int = READ_DEFAULT_LIMIT) -> str:
        """Read a text file from the workdir, with line numbers. Use offset and limit to page through
        long files, such as saved tool results. A pointer "path:L412" reads from line 412.

        Args:
            path: A file relative to the workdir, e.g. "outputs/large_tool_results/query_kb-0123abcd.txt",
                or a pointer to one of its lines, e.g. "outputs/conversation_history/session_x.md:L412".
            offset: The first line to read, counting from 0 (a pointer's line is used when this is 0).
            limit: The most lines to return.
        """
        return _read(workdir, path=path, offset=offset, limit=limit)

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
