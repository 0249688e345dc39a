"""What the chat pages show, computed from primitives: pressure meter and hint, receipts, collapsing.

Pure functions (no ORM, no request): the UI only projects the token-usage figures (SPEC 7).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_platform.workdir import WorkdirPathError, resolve
from context_engine.compaction.receipts import Receipt, parse_receipt
from context_engine.compaction.tool_results import sha256_text, tool_result_path
from context_engine.lines import LINE_BREAK, split_lines
from context_engine.policy.pressure import HINT_RATIO

AUTO_RATIO = 1.0  # at or above the trigger the next request compresses by itself (SPEC 6: >=)
WARNING_RATIO = 0.75
DANGER_RATIO = 0.9
# Tool results and arguments longer than this are collapsed behind <details>.
COLLAPSE_CHARS = 600
COLLAPSE_LINES = 10
# A user's own message is read more often than a tool's output: it collapses only when really long.
LONG_MESSAGE_CHARS = 3000
LONG_MESSAGE_LINES = 40


def as_int(value: Any) -> int | None:
    """An integer from an event field or a query string, else None (``inf`` and thousands of digits too)."""
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _ratio(value: Any) -> float | None:
    try:
        return None if value is None or isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return None


def _percent(part: int | None, whole: int | None) -> float:
    if not part or not whole or whole <= 0:
        return 0.0
    return round(min(1.0, max(0.0, part / whole)) * 100, 1)


@dataclass(frozen=True)
class Pressure:
    """The state panel's meter: the next request's size against the trigger ``T`` and the window, as
    ``context_engine.policy.pressure`` computes it (this only adds the display: percents, tone, hint)."""

    measured: bool
    tokens: int | None = None
    trigger: int | None = None
    window: int | None = None
    ratio: float | None = None
    basis: str = "estimated"  # "reported": anchored on the provider's prompt tokens of the latest call
    reported_tokens: int | None = None
    added_tokens: int | None = None  # estimated since the reported call
    trigger_percent: float = 0.0
    window_percent: float = 0.0
    tone: str = "ok"
    hint: str = ""  # "" | "suggest" (85–99%: compress now if you like) | "auto" (>= 100%: it will)
    summary_active: bool = False

    @property
    def suggest(self) -> bool:
        return bool(self.hint)


def pressure_view(figures: Mapping[str, Any] | None, *, summary_active: bool = False) -> Pressure:
    """The meter for ``figures`` (``context_engine.policy.pressure.pressure_now``: the figures of the next
    request on the agent's current configuration)."""
    if not figures:
        return Pressure(measured=False, summary_active=summary_active)
    tokens = as_int(figures.get("next_llm_input_tokens"))
    trigger = as_int(figures.get("summary_trigger_tokens"))
    window = as_int(figures.get("context_window"))
    ratio = _ratio(figures.get("summary_pressure_ratio"))
    if tokens is None:
        return Pressure(measured=False, summary_active=summary_active)
    level = ratio or 0
    tone = "danger" if level >= DANGER_RATIO else "warning" if level >= WARNING_RATIO else "ok"
    hint = "auto" if level >= AUTO_RATIO else "suggest" if level >= HINT_RATIO else ""
    reported = figures.get("pressure_basis") == "reported"
    return Pressure(
        measured=True,
        tokens=tokens,
        trigger=trigger,
        window=window,
        ratio=ratio,
        basis="reported" if reported else "estimated",
        reported_tokens=as_int(figures.get("reported_input_tokens")) if reported else None,
        added_tokens=as_int(figures.get("estimated_since_tokens")) if reported else None,
        trigger_percent=_percent(tokens, trigger),
        window_percent=_percent(tokens, window),
        tone=tone,
        hint=hint,
        summary_active=summary_active,
    )


# The saved-file page shows at most this much text; the download has all of it.
FILE_PAGE_MAX_CHARS = 500_000


@dataclass(frozen=True)
class SavedFile:
    """A workdir file as its page shows it: path, size, SHA-256 of its text, the text (maybe cut)."""

    path: str
    size_bytes: int
    sha256: str
    text: str
    cut: bool

    @property
    def numbered_lines(self) -> list[tuple[int, str]]:
        """``(number, line with its break)``: lines as ``read_file`` and the index's pointers count them
        (``context_engine.lines``), so ``#L412`` on this page is the line ``path:L412`` names."""
        lines = split_lines(self.text)
        ends = [LINE_BREAK] * len(lines)
        if lines and not self.text.endswith(LINE_BREAK):
            ends[-1] = ""
        return [(n, line + end) for n, (line, end) in enumerate(zip(lines, ends, strict=True), start=1)]


def saved_file(*, path: str, text: str) -> SavedFile:
    return SavedFile(
        path=resolve(path),
        size_bytes=len(text.encode("utf-8", "surrogatepass")),
        sha256=sha256_text(text),
        text=text[:FILE_PAGE_MAX_CHARS],
        cut=len(text) > FILE_PAGE_MAX_CHARS,
    )


def receipt_parse(content: object) -> Receipt | None:
    """The receipt fields of a saved-result message (where its full output lives), or None when
    ``content`` is not a receipt."""
    return parse_receipt(content)


@dataclass(frozen=True)
class SavedResult:
    """A transcript tool result whose full text is saved in the workdir: compaction shows the model a
    receipt pointing at ``path`` instead of the text (the file is content-addressed, so it holds exactly
    this text)."""

    path: str
    sha256: str
    size_bytes: int


def saved_result(*, content: Any, tool_name: str, saved_paths: frozenset[str]) -> SavedResult | None:
    """The saved copy of a tool result, when ``saved_paths`` (the thread's saved results) holds it."""
    if not saved_paths or not isinstance(content, str) or not content:
        return None
    digest = sha256_text(content)
    path = tool_result_path(tool_name or None, digest)
    if path not in saved_paths:
        return None
    return SavedResult(path=path, sha256=digest, size_bytes=len(content.encode("utf-8", "surrogatepass")))


def is_long(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    return len(text) > COLLAPSE_CHARS or text.count("\n") >= COLLAPSE_LINES


def is_long_message(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    return len(text) > LONG_MESSAGE_CHARS or text.count("\n") >= LONG_MESSAGE_LINES


def transcript_order(messages: Sequence[Any]) -> list[Any]:
    """Messages (``.seq``, ``.run_id``) in reading order: run by run, each run's messages by ``seq``.

    A message sent during a run has a lower ``seq`` than that run's later replies; grouped by run
    (runs start one at a time, oldest first) it comes after that run's reply, as it was answered. A
    message without a run stays with the run before it.
    """
    keyed = []
    run_id = 0
    for message in sorted(messages, key=lambda m: m.seq):
        run_id = message.run_id or run_id
        keyed.append(((run_id, message.seq), message))
    return [message for _key, message in sorted(keyed, key=lambda item: item[0])]


def first_line(text: Any, limit: int = 120) -> str:
    line = (text or "").strip().split("\n", 1)[0] if isinstance(text, str) else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def workdir_path(value: Any) -> str:
    """A valid virtual workdir path (the page links to it), else ``""``: the fragment takes it from the
    query string, and a path the file URL cannot hold (a newline, ``..``) must not break the render."""
    try:
        return resolve(value) if isinstance(value, str) and value else ""
    except WorkdirPathError:
        return ""
