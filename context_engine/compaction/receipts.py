"""The receipt that stands for a saved tool result in the model's view: the one place its byte format
(``formats.RECEIPT_*``) is rendered and read back, by the engine and by the pages. A receipt is a fixed
frame (header, tool, size, hash, path) and, optionally, a preview and the count of characters the
preview left out; ``parse_receipt(render_receipt(...))`` gives the same fields back."""

from __future__ import annotations

import re
from dataclasses import dataclass

from context_engine.formats import (
    RECEIPT_HEADER,
    RECEIPT_LINE_SEPARATOR,
    RECEIPT_PATH_PREFIX,
    RECEIPT_PREVIEW_HEADER,
    RECEIPT_SHA256_PREFIX,
    RECEIPT_TOKENS_PREFIX,
    RECEIPT_TOOL_PREFIX,
    RECEIPT_TRUNCATED_TEMPLATE,
    RECEIPT_UNKNOWN_TOOL,
)

_FRAME = (RECEIPT_TOOL_PREFIX, RECEIPT_TOKENS_PREFIX, RECEIPT_SHA256_PREFIX, RECEIPT_PATH_PREFIX)
_TRUNCATED = re.compile(
    "^" + re.escape(RECEIPT_TRUNCATED_TEMPLATE).replace(re.escape("{n}"), "([0-9]+)") + "$"
)


@dataclass(frozen=True)
class Receipt:
    tool_name: str
    tokens: int  # the saved text's estimate
    sha256: str
    path: str  # in the thread's workdir
    preview: str = ""
    omitted_chars: int = 0  # what the preview left out


def render_receipt(
    *, tool_name: str | None, tokens: int, sha256: str, path: str, preview: str, omitted_chars: int
) -> str:
    lines = [
        RECEIPT_HEADER,
        RECEIPT_TOOL_PREFIX + (tool_name or RECEIPT_UNKNOWN_TOOL),
        RECEIPT_TOKENS_PREFIX + str(tokens),
        RECEIPT_SHA256_PREFIX + sha256,
        RECEIPT_PATH_PREFIX + path,
    ]
    if preview:
        lines += ["", RECEIPT_PREVIEW_HEADER, preview]
    if omitted_chars > 0:
        lines.append(RECEIPT_TRUNCATED_TEMPLATE.format(n=omitted_chars))
    return RECEIPT_LINE_SEPARATOR.join(lines)


def parse_receipt(text: object) -> Receipt | None:
    """The fields of a receipt, or None when ``text`` is not one (a receipt without a path is none). The
    frame's lines are read by their prefixes, in any order (a receipt written by hand or by an earlier
    version may lack one); the preview is what follows its header, less a final truncation note."""
    if not isinstance(text, str) or not text.startswith(RECEIPT_HEADER + RECEIPT_LINE_SEPARATOR):
        return None
    lines = text.split(RECEIPT_LINE_SEPARATOR)[1:]
    omitted = 0
    if lines and (truncated := _TRUNCATED.match(lines[-1])):
        omitted, lines = int(truncated.group(1)), lines[:-1]
    frame, preview = lines, ""
    for at in range(len(lines) - 1):
        if lines[at : at + 2] == ["", RECEIPT_PREVIEW_HEADER]:
            frame, preview = lines[:at], RECEIPT_LINE_SEPARATOR.join(lines[at + 2 :])
            break
    fields = dict.fromkeys(_FRAME, "")
    for line in frame:
        prefix = next((p for p in _FRAME if line.startswith(p)), None)
        if prefix is not None and not fields[prefix]:
            fields[prefix] = line[len(prefix) :]
    tool, tokens, sha256, path = fields.values()
    if not path:
        return None
    return Receipt(tool, int(tokens) if tokens.isdigit() else 0, sha256, path, preview, omitted)


def receipt_preview(text: str) -> str:
    """What a receipt shows of its result (its preview), or ``text`` itself when it is no receipt."""
    receipt = parse_receipt(text)
    return text if receipt is None else receipt.preview
