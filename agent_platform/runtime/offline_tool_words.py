"""The offline model's sentences about what its tools returned (titles, paths, counts, never a tool's
raw text), in the active language: ``OfflineChatModel`` describes them under the page's language
(``AgentRun.language``), as it words its direct replies (``offline_words``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from context_engine.formats import (
    RECEIPT_HEADER,
    RECEIPT_PATH_PREFIX,
    RECEIPT_PREVIEW_HEADER,
    RECEIPT_TOKENS_PREFIX,
    RECEIPT_TRUNCATED_TEMPLATE,
)

_TRUNCATED_PREFIX = RECEIPT_TRUNCATED_TEMPLATE.split("{", 1)[0]


def clip(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _titles(records: Sequence[Any], limit: int = 3) -> str:
    """“Title” (source), … for the first records, naming how many more there are."""
    parts = []
    for item in records[:limit]:
        if not isinstance(item, dict):
            continue
        title = item.get("title") or item.get("source") or item.get("url") or _("untitled")
        where = item.get("site_name") or item.get("url") if "url" in item else item.get("source")
        label = f"“{clip(title, 70)}”"
        if where and where != title:
            label += f" ({clip(where, 60)})"
        parts.append(label)
    more = len(records) - len(parts)
    listed = ", ".join(parts)
    return _("%(listed)s and %(more)d more") % {"listed": listed, "more": more} if more > 0 else listed


def _describe_search(tool: str, payload: dict[str, Any]) -> str:
    query = payload.get("query")
    words = {
        "what": _("the web") if tool == "web_search" else _("the knowledge base"),
        "query": clip(query, 60) if query else "",
    }
    searching = (_("Searching %(what)s for “%(query)s”") if query else _("Searching %(what)s")) % words
    if payload.get("error"):
        return _("%(searching)s did not work: %(error)s") % {
            "searching": searching,
            "error": clip(payload["error"], 200),
        }
    results = payload.get("results")
    count = payload.get("result_count", len(results) if isinstance(results, list) else 0)
    if not count:
        return _("%(searching)s found nothing.") % {"searching": searching}
    records = results if isinstance(results, list) else []
    sentence = ngettext(
        "%(searching)s found %(count)d result: %(titles)s.",
        "%(searching)s found %(count)d results: %(titles)s.",
        count,
    ) % {"searching": searching, "count": count, "titles": _titles(records)}
    best = records[0] if records and isinstance(records[0], dict) else {}
    body = next((best.get(k) for k in ("content", "content_preview", "snippet", "text") if best.get(k)), "")
    if body:
        sentence += " " + _("The best match says: “%(text)s”") % {"text": clip(body, 160)}
    return sentence


def _describe_receipt(tool: str, text: str) -> str:
    """A saved result: where the full text is, and what its preview shows (never the receipt itself)."""
    fields = {}
    preview = ""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line == RECEIPT_PREVIEW_HEADER:
            rest = lines[index + 1 :]
            if rest and rest[-1].startswith(_TRUNCATED_PREFIX):
                rest = rest[:-1]
            preview = "\n".join(rest).strip()
            break
        for prefix in (RECEIPT_TOKENS_PREFIX, RECEIPT_PATH_PREFIX):
            if line.startswith(prefix):
                fields[prefix] = line[len(prefix) :].strip()
    words = {"tool": tool, "path": fields.get(RECEIPT_PATH_PREFIX) or _("a saved file")}
    if tokens := fields.get(RECEIPT_TOKENS_PREFIX):
        sentence = _(
            "The %(tool)s result was large (about %(tokens)s tokens); its full text is saved at %(path)s."
        ) % {**words, "tokens": tokens}
    else:
        sentence = _("The %(tool)s result was large; its full text is saved at %(path)s.") % words
    try:
        payload = json.loads(preview)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and payload.get("kind"):
        sentence += " " + _describe_search(tool, payload)
    return sentence


def _describe_search_text(tool: str, text: str, args: dict[str, Any]) -> str | None:
    """A search's JSON (an object, or a bare list of results); None when it is not JSON."""
    try:
        payload = json.loads(text)
    except ValueError:
        return None
    if isinstance(payload, list):
        payload = {"results": payload}
    return _describe_search(tool, payload) if isinstance(payload, dict) else None


def _describe_listing(tool: str, text: str, args: dict[str, Any]) -> str:
    entries = [line for line in text.splitlines() if line.strip()]
    if not entries or text.startswith("(no files"):
        return _("The workdir has no files there yet.")
    shown = ", ".join(entries[:5])
    if len(entries) > 5:
        shown = _("%(listed)s and %(more)d more") % {"listed": shown, "more": len(entries) - 5}
    return ngettext(
        "The workdir lists %(count)d entry: %(shown)s.",
        "The workdir lists %(count)d entries: %(shown)s.",
        len(entries),
    ) % {"count": len(entries), "shown": shown}


def _describe_read(tool: str, text: str, args: dict[str, Any]) -> str:
    path = args.get("path") or _("the file")
    rows = [line.split("\t", 1)[-1] for line in text.splitlines() if "\t" in line]
    first = next((row for row in rows if row.strip()), "")
    sentence = ngettext(
        "I read %(path)s (%(count)d line shown).", "I read %(path)s (%(count)d lines shown).", len(rows)
    ) % {"path": path, "count": len(rows)}
    return sentence + (" " + _("It begins: “%(text)s”") % {"text": clip(first, 140)} if first else "")


def _echo(tool: str, text: str, args: dict[str, Any]) -> str:
    """Tools whose own reply is already a short sentence for the user."""
    return f"{tool}: {clip(text, 200)}"


def _describe_task(tool: str, text: str, args: dict[str, Any]) -> str:
    return _("The sub-agent answered: “%(text)s”") % {"text": clip(text, 240)}


def _describe_any(tool: str, text: str) -> str:
    if not text.strip():
        return _("%(tool)s returned nothing.") % {"tool": tool}
    return ngettext(
        "%(tool)s returned %(count)d character, starting with “%(text)s”",
        "%(tool)s returned %(count)d characters, starting with “%(text)s”",
        len(text),
    ) % {"tool": tool, "count": len(text), "text": clip(text, 100)}


# A describer returns None when the text is not what its tool usually returns: then it is described as
# any tool's text (``_describe_any``).
_DESCRIBERS: dict[str, Callable[[str, str, dict[str, Any]], str | None]] = {
    "query_kb": _describe_search_text,
    "web_search": _describe_search_text,
    "ls": _describe_listing,
    "read_file": _describe_read,
    "write_file": _echo,
    "edit_file": _echo,
    "ask_user": _echo,
    "task": _describe_task,
}


def describe_tool_result(tool: str | None, text: str, args: dict[str, Any]) -> str:
    """One or two readable sentences citing what a tool found (titles, paths, counts), never its raw text."""
    tool = tool or "tool"
    text = text or ""
    if text.startswith(RECEIPT_HEADER):
        return _describe_receipt(tool, text)
    if text.startswith("Error: "):
        return _("%(tool)s reported a problem: %(error)s") % {
            "tool": tool,
            "error": clip(text[len("Error: ") :], 200),
        }
    describer = _DESCRIBERS.get(tool)
    sentence = describer(tool, text, args) if describer else None
    return sentence if sentence is not None else _describe_any(tool, text)
