"""The engine's byte formats read back for people (``formats`` writes them): the summary message's own
text without the wrapper the model reads, and a history file as sections of messages whose lines keep
their numbers (so a ``path:L412`` pointer lands on the same line in the readable view)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from context_engine.formats import (
    HISTORY_SECTION_TEMPLATE,
    SUMMARY_MESSAGE_NO_FILE_TEMPLATE,
    SUMMARY_MESSAGE_TEMPLATE,
)
from context_engine.lines import split_lines

_WRAPPED_HEAD = SUMMARY_MESSAGE_TEMPLATE.split("{file_path}")[0]
_WRAPPED_OPEN, _WRAPPED_CLOSE = "<summary>\n", "\n</summary>"
_PLAIN_HEAD = SUMMARY_MESSAGE_NO_FILE_TEMPLATE.split("{summary}")[0]
_SECTION_HEAD = HISTORY_SECTION_TEMPLATE.split("{timestamp}")[0]
_OPEN = re.compile(r'^<message type="([^"]*)">')
_CLOSE = "</message>"
_CONTENT_OPEN, _CONTENT_CLOSE = "  <content>", "</content>"
_CALL = re.compile(r'^  <tool_call id="[^"]*" name="([^"]*)">(.*)</tool_call>$')


def summary_body(text: str) -> str:
    """The summary the model wrote, without the sentences and ``<summary>`` tags around it."""
    if text.startswith(_WRAPPED_HEAD) and _WRAPPED_OPEN in text:
        body = text.split(_WRAPPED_OPEN, 1)[1]
        return body.rpartition(_WRAPPED_CLOSE)[0] if _WRAPPED_CLOSE in body else body
    if text.startswith(_PLAIN_HEAD):
        return text[len(_PLAIN_HEAD) :]
    return text


@dataclass(frozen=True)
class HistoryLine:
    number: int
    text: str
    call: str = ""  # the tool a ``<tool_call>`` line calls (its text is then the arguments)


@dataclass
class HistoryMessage:
    role: str  # as the file names it: human, ai, tool, system
    lines: list[HistoryLine] = field(default_factory=list)


@dataclass
class HistorySection:
    title: str  # the section's timestamp, as the file writes it (ISO 8601)
    number: int
    messages: list[HistoryMessage] = field(default_factory=list)

    @property
    def at(self) -> datetime | None:
        """The timestamp as a date and time, for a reader (None when the head holds something else)."""
        try:
            return datetime.fromisoformat(self.title)
        except ValueError:
            return None


def history_read(text: str) -> list[HistorySection]:
    """``text`` (a history file) as its sections and messages; text outside any section or message is
    kept as a message of role ``""``, so nothing in the file is left out of the readable view."""
    reader = _HistoryReader()
    for number, line in enumerate(split_lines(text), start=1):
        reader.read(number, line)
    return reader.sections


class _HistoryReader:
    """``history_read``'s state: the sections so far, the open message, and whether a ``<content>`` is
    open (its lines are text, even one that reads as a tool call)."""

    def __init__(self) -> None:
        self.sections: list[HistorySection] = []
        self.current: HistoryMessage | None = None
        self.in_content = False

    def read(self, number: int, line: str) -> None:
        message = self.current
        if message is None:
            opened = self._between_messages(number, line)
            if opened is None:
                return
            message, line = opened
        self._in_message(message, number, line)

    def _between_messages(self, number: int, line: str) -> tuple[HistoryMessage, str] | None:
        """A section head, a blank line, loose text, or a message's opening tag: then the message and
        the rest of its line when there is one to read (the tool-call form has its parts on the lines
        that follow)."""
        if line.startswith(_SECTION_HEAD):
            self.sections.append(HistorySection(line[len(_SECTION_HEAD) :], number))
            return None
        if not line.strip():
            return None
        if not self.sections:
            self.sections.append(HistorySection("", number))
        opened = _OPEN.match(line)
        message = HistoryMessage(opened.group(1) if opened else "")
        self.sections[-1].messages.append(message)
        if not opened:
            message.lines.append(HistoryLine(number, line))
            return None
        self.current = message
        rest = line[opened.end() :]
        return (message, rest) if rest else None

    def _in_message(self, message: HistoryMessage, number: int, line: str) -> None:
        """A line of the open message: its closing tag, a tool call, or text in or around ``<content>``."""
        if line == _CLOSE:
            self.current = None
            return
        if not self.in_content and (call := _CALL.match(line)):
            message.lines.append(HistoryLine(number, call.group(2), call=call.group(1)))
            return
        if line.startswith(_CONTENT_OPEN) and not self.in_content:
            line, self.in_content = line[len(_CONTENT_OPEN) :], True
        if self.in_content and line.endswith(_CONTENT_CLOSE):
            line, self.in_content = line[: -len(_CONTENT_CLOSE)], False
        elif not self.in_content and line.endswith(_CLOSE):
            line = line[: -len(_CLOSE)]
            self.current = None
        message.lines.append(HistoryLine(number, line))
