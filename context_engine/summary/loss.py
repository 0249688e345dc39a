"""The loss report of one fold and its single repair pass (issue 14 item 3): the identifiers of the
folded messages checked against the summary, what stays verbatim, and the saved tool-result files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from langchain_core.messages import BaseMessage

from context_engine.formats import REPAIR_IDENTIFIER_LINE, REPAIR_IDENTIFIERS_MAX, REPAIR_PROMPT_TEMPLATE
from context_engine.store import ResultStore
from context_engine.summary.fold_plan import fold_identifiers, message_text
from context_engine.summary.identifiers import LossReport, loss_report

SAVED_FILE_MAX_CHARS = 2_000_000  # enough for any identifier search; a bigger file is read this far


def read_saved_texts(store: ResultStore | None, paths: Iterable[str]) -> list[str]:
    """The texts of the saved files at ``paths``; a file that cannot be read counts as absent."""
    texts: list[str] = []
    if store is None:
        return texts
    for path in paths:
        try:
            texts.append(store.read_text(path)[:SAVED_FILE_MAX_CHARS])
        except Exception:  # noqa: BLE001, S112 - a missing or unreadable file just holds nothing
            continue
    return texts


def fold_loss_report(
    folded: Sequence[BaseMessage],
    *,
    summary: str,
    kept: Sequence[BaseMessage],
    saved_texts: Iterable[str],
    identifiers: dict[str, str] | None = None,
) -> LossReport:
    """Where each identifier of ``folded`` ended up after a summary ``summary`` (or a drop note)."""
    found = fold_identifiers(folded) if identifiers is None else identifiers
    return loss_report(found, summary=summary, kept=[message_text(m) for m in kept], saved=saved_texts)


def repair_prompt(prompt: str, lost: Sequence[str]) -> str:
    """The summary prompt again, with the identifiers the first summary lost listed as must-keep."""
    lines = "\n".join(REPAIR_IDENTIFIER_LINE.format(identifier=i) for i in lost[:REPAIR_IDENTIFIERS_MAX])
    return REPAIR_PROMPT_TEMPLATE.format(prompt=prompt, identifiers=lines)
