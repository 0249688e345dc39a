"""``search_history``: a literal or regular-expression search over what compression put out of view (the
thread's conversation-history files and saved tool results) and the files the user attached
(``uploads/``, with the text extracted from them), answering ``path:L<n>: text`` hits that
``read_file`` opens in one call. Bounded and paged like ``read_file``; every failure is an ``Error: ...``
string the model can act on.

Patterns run on Google's RE2 (``google-re2``): linear time in the text searched, and a compile bounded
by ``REGEX_MAX_MEM`` bytes, so ``a{2147483647}`` is refused at once instead of allocating gigabytes.
Each search compiles its own pattern and keeps nothing (no module cache to fill). RE2 has no
backreferences or lookaround; a pattern it refuses is a tool error. The search checks the call's
budget (``call_budget.budget_check``: an event and a clock read) before each line: Stop and the
wall-time budget reach it mid-file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import re2
from langchain_core.tools import BaseTool, tool

from agent_platform.tools.call_budget import budget_check
from agent_platform.workdir import Workdir
from context_engine.errors import StoreError
from context_engine.formats import CONVERSATION_HISTORY_DIR, LARGE_TOOL_RESULTS_DIR, UPLOADS_DIR
from context_engine.lines import READ_MAX_CHARS, pointer, split_lines

# Read through the workdir like read_file (its path and link rules); a binary upload holds no text hits.
SEARCHED_DIRS = (CONVERSATION_HISTORY_DIR, LARGE_TOOL_RESULTS_DIR, UPLOADS_DIR)
SEARCH_DEFAULT_LIMIT = 50
SEARCH_MAX_LIMIT = 200
SEARCH_MAX_HITS = 10_000  # hits counted per search; past it the total is given as "at least"
HIT_MAX_CHARS = 300  # a hit's line is clipped around its match to this many characters
PATTERN_MAX_CHARS = 1000
# RE2's memory for one compiled pattern (its default, said here): past it the compile fails, cleanly.
REGEX_MAX_MEM = 8 << 20
REPEAT_MAX = 1000  # RE2's own bound on a repeat count
REGEX_SYNTAX = (
    f"RE2 syntax (as Python's re, without backreferences or lookaround; repeats at most {{{REPEAT_MAX}}})"
)


def _error(message: str) -> str:
    return f"Error: {message}"


def searched_files(workdir: Workdir) -> list[str]:
    """The files ``search_history`` reads: history files first, then saved tool results, then uploads,
    by name."""
    paths: list[str] = []
    for directory in SEARCHED_DIRS:
        if not workdir.exists(directory):
            continue
        paths += [path for path in workdir.list_dir(directory) if not path.endswith("/")]
    return paths


def _clip(line: str, start: int, end: int) -> str:
    if len(line) <= HIT_MAX_CHARS:
        return line
    room = max(HIT_MAX_CHARS - (end - start), 0)
    left = max(start - room // 2, 0)
    right = min(left + max(HIT_MAX_CHARS, end - start), len(line))
    return ("…" if left else "") + line[left:right] + ("…" if right < len(line) else "")


def _argument_error(pattern: str, *, offset: int, limit: int) -> str | None:
    if not pattern:
        return "give a pattern to search for."
    if len(pattern) > PATTERN_MAX_CHARS:
        return f"the pattern is longer than {PATTERN_MAX_CHARS} characters."
    if not pattern.isascii() and not _is_unicode(pattern):
        return "the pattern is not valid Unicode text (a lone surrogate)."
    if offset < 0 or not 1 <= limit <= SEARCH_MAX_LIMIT:
        return f"offset must be 0 or more and limit between 1 and {SEARCH_MAX_LIMIT}."
    return None


def _is_unicode(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


_REPEAT = re.compile(r"\{(\d+)(?:,(\d*))?\}")


def _repeat_checked(pattern: str) -> None:
    """Refuse a repeat count over ``REPEAT_MAX``: RE2 reads ``a{2147483647}`` (too many digits for its
    parser) as literal text, which is not what the model asked for. Escapes and classes are skipped."""
    position, in_class = 0, False
    while position < len(pattern):
        char = pattern[position]
        if char == "\\":
            position += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            position += 2 if pattern[position + 1 : position + 2] == "]" else 1  # "[]a]": "]" is a member
            continue
        elif char == "{" and (repeat := _REPEAT.match(pattern, position)):
            if any(count and int(count) > REPEAT_MAX for count in repeat.groups()):
                raise re2.error(f"repeat count over {REPEAT_MAX}: {repeat.group()}")
        position += 1


def _compiled(pattern: str, *, use_regex: bool, ignore_case: bool) -> re2._Regexp:
    """The pattern compiled by RE2 within ``REGEX_MAX_MEM``; raises ``re2.error`` when it cannot be."""
    if use_regex:
        _repeat_checked(pattern)
    options = re2.Options()
    options.max_mem = REGEX_MAX_MEM
    options.case_sensitive = not ignore_case
    options.literal = not use_regex
    options.log_errors = False  # a refused pattern is the model's error, said in its answer
    # Not ``re2.compile``: it keeps the last 128 patterns (up to 1 GiB) in a module-wide cache.
    return re2._Regexp(pattern, options)


def _line_matches(compiled: re2._Regexp, text: str) -> Iterator[tuple[int, str, re2._Match]]:
    """Each matching line of a text, numbered from 1 (the call's budget checked as it goes)."""
    for number, line in enumerate(split_lines(text), start=1):
        budget_check()
        match = compiled.search(line)
        if match is not None:
            yield number, line, match


def _collect(
    workdir: Workdir, files: list[str], compiled: re2._Regexp, *, offset: int, limit: int
) -> tuple[list[str], int]:
    """The hits on the page ``offset``/``limit``, and how many were counted (at most ``SEARCH_MAX_HITS``)."""
    hits: list[str] = []
    total = 0
    for path in files:
        budget_check()
        try:
            text = workdir.read_text(path)
        except StoreError:
            continue  # a binary or vanished file holds no text hits
        for number, line, match in _line_matches(compiled, text):
            total += 1
            if offset < total <= offset + limit:
                hits.append(f"{pointer(path, number)}: {_clip(line, match.start(), match.end())}")
            if total >= SEARCH_MAX_HITS:
                return hits, total
    return hits, total


def _answer(pattern: str, hits: list[str], *, total: int, offset: int) -> str:
    if not total:
        return f"No match for {pattern!r} in {', '.join(SEARCHED_DIRS)}."
    shown = _bounded(hits)
    end = offset + len(shown)
    counted = f"at least {total}" if total >= SEARCH_MAX_HITS else str(total)
    if not shown:
        return _error(f"offset {offset} is past the last hit ({counted} hits).")
    footer = f"(hits {offset + 1}-{end} of {counted}"
    footer += f"; call search_history with offset={end} for more)" if end < total else ")"
    return "\n".join([*shown, footer])


def search_files(
    workdir: Workdir,
    pattern: str,
    *,
    use_regex: bool = False,
    ignore_case: bool = False,
    offset: int = 0,
    limit: int = SEARCH_DEFAULT_LIMIT,
) -> str:
    """The text ``search_history`` answers (see the module docstring)."""
    if problem := _argument_error(pattern, offset=offset, limit=limit):
        return _error(problem)
    try:
        compiled = _compiled(pattern, use_regex=use_regex, ignore_case=ignore_case)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        reason = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        return _error(
            f"not a valid regular expression in {REGEX_SYNTAX}: {reason}. "
            "Pass regex=false to search for it literally."
        )
    try:
        files = searched_files(workdir)
        hits, total = _collect(workdir, files, compiled, offset=offset, limit=limit)
    except StoreError as exc:
        return _error(str(exc))
    return _answer(pattern, hits, total=total, offset=offset)


def _bounded(rows: list[str]) -> list[str]:
    kept: list[str] = []
    size = 0
    for row in rows:
        if kept and size + len(row) + 1 > READ_MAX_CHARS:
            break
        kept.append(row)
        size += len(row) + 1
    return kept


def build_search_history_tool(workdir: Workdir) -> BaseTool:
    @tool("search_history", parse_docstring=True)
    def search_history(
        pattern: str, regex: bool = False, ignore_case: bool = False, offset: int = 0, limit: int = 50
    ) -> str:
        """Search the conversation history that was summarized, the saved tool results and uploads/
        for a text.
        Each hit is "path:L<line>: text"; read_file("path:L<line>") opens the file at that line.

        Args:
            pattern: The text to find (or a regular expression when regex is true).
            regex: Treat pattern as a regular expression in RE2 syntax (like Python's re, but no
                backreferences or lookaround; a repeat count is at most 1000).
            ignore_case: Match regardless of letter case.
            offset: Skip this many hits (to page through many).
            limit: The most hits to return (at most 200).
        """
        return search_files(
            workdir, pattern, use_regex=regex, ignore_case=ignore_case, offset=offset, limit=limit
        )

    return search_history
