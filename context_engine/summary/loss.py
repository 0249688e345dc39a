"""The loss report of one fold and its single repair pass (issues 14 and 24): the identifiers of the
folded messages sorted by what a reader of the model's view can reach. "The view names a file" means
its path appears verbatim in the summary or in a kept message (a receipt's frame, a pinned message, a
tool call of the tail): only then is a saved file one read away. The history file, when the view names
it, counts as two reads (a whole transcript), and so does a saved file only the history file names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from langchain_core.messages import BaseMessage

from context_engine.compaction.tool_results import tool_result_text
from context_engine.formats import (
    CONVERSATION_HISTORY_DIR,
    HISTORY_FILE_TEMPLATE,
    REPAIR_IDENTIFIER_LINE,
    REPAIR_IDENTIFIERS_MAX,
    REPAIR_PROMPT_TEMPLATE,
)
from context_engine.store import ResultStore
from context_engine.summary.fold_plan import fold_identifiers, message_text, tool_call_args_text
from context_engine.summary.history import render_history_section
from context_engine.summary.identifiers import LOST_LIST_MAX, LossReport, loss_report
from context_engine.summary.reference_index import NO_INDEX, ReferenceIndex

SAVED_FILE_MAX_CHARS = 2_000_000  # enough for any identifier search; a bigger file is read this far

_HISTORY_PREFIX, _HISTORY_SUFFIX = HISTORY_FILE_TEMPLATE.format(
    directory=CONVERSATION_HISTORY_DIR, session_id="\0"
).split("\0")
_HISTORY_PATH = re.compile(rf"{re.escape(_HISTORY_PREFIX)}[A-Za-z0-9_-]+{re.escape(_HISTORY_SUFFIX)}")


def read_saved_texts(store: ResultStore | None, paths: Iterable[str]) -> dict[str, str]:
    """The texts of the saved files at ``paths``, by path; a file that cannot be read counts as absent."""
    texts: dict[str, str] = {}
    if store is None:
        return texts
    for path in paths:
        try:
            texts[path] = store.read_text(path)[:SAVED_FILE_MAX_CHARS]
        except Exception:  # noqa: BLE001, S112 - a missing or unreadable file just holds nothing
            continue
    return texts


def view_text(message: BaseMessage) -> str:
    """A kept message as the model reads it, frame included (a receipt names its saved file there),
    with its tool calls' arguments (``read_file(path)`` in the tail names ``path``)."""
    content = message.content
    text = content if isinstance(content, str) else tool_result_text(content)
    return text + tool_call_args_text(message)


def named_paths(paths: Iterable[str], view: Sequence[str]) -> list[str]:
    """Those of ``paths`` that appear verbatim in one of the ``view`` texts."""
    return [path for path in paths if path and any(path in text for text in view)]


def names_history_file(view: Sequence[str]) -> bool:
    """Whether one of the ``view`` texts names a conversation-history file (a drop note does)."""
    return any(_HISTORY_PATH.search(text) for text in view)


def history_text(folded: Sequence[BaseMessage]) -> str:
    """The folded span as the history file holds it: the section the caller appended before the report
    (a message the section leaves out, or escapes, is not "inside it")."""
    return render_history_section(folded)


def through_history(history: Sequence[str], saved: Mapping[str, str]) -> list[str]:
    """What a reader reaches through the history files ``history`` (named by the view): their texts, and
    the saved files they name (the folded receipts' frames are in the history file)."""
    return [*history, *(saved[path] for path in named_paths(saved, history))]


def fold_loss_report(
    folded: Sequence[BaseMessage],
    *,
    summary: str,
    kept: Sequence[BaseMessage],
    saved_texts: Mapping[str, str] | Iterable[str],
    identifiers: dict[str, str] | None = None,
    history_named: bool | None = None,
    index: ReferenceIndex = NO_INDEX,
) -> LossReport:
    """Where each identifier of ``folded`` ended up after a summary ``summary`` (or a drop note), for a
    reader of the view ``summary`` + ``kept``.

    ``saved_texts``: the saved tool-result files by path (``read_saved_texts``); one counts only when the
    view names its path, and texts without a path never count. ``history_named``: whether the message
    that stands for the fold names the history file the folded span was just appended to (the summary
    message does, ``SUMMARY_MESSAGE_TEMPLATE``); by default, whether ``summary`` or ``kept`` names one.
    ``index``: the reference index that follows the summary: what it lists is in view, and the lines it
    names for what it left out are one read away. At most ``LOST_LIST_MAX`` lost identifiers are listed
    (the counts are always complete)."""
    found = fold_identifiers(folded) if identifiers is None else identifiers
    view = [summary, *(view_text(m) for m in kept)]
    saved = saved_texts if isinstance(saved_texts, Mapping) else {}
    one_read = [saved[path] for path in named_paths(saved, view)]
    if history_named is None:
        history_named = names_history_file(view)
    two_reads = through_history([history_text(folded)], saved) if history_named and found else []
    return loss_report(
        found,
        summary=summary,
        kept=[*(message_text(m) for m in kept), index.text],
        one_read=[*one_read, *index.range_texts],
        two_reads=two_reads,
        limit=LOST_LIST_MAX,
    )


def repair_prompt(prompt: str, lost: Sequence[str]) -> str:
    """The summary prompt again, with the identifiers the first summary lost listed as must-keep."""
    lines = "\n".join(REPAIR_IDENTIFIER_LINE.format(identifier=i) for i in lost[:REPAIR_IDENTIFIERS_MAX])
    return REPAIR_PROMPT_TEMPLATE.format(prompt=prompt, identifiers=lines)
