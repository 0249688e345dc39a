"""A thread as a file: the whole transcript, its attachments (with SHA-256) and the compression records,
as one JSON-safe dict (``thread_export``) and as Markdown (``export_markdown``, a pure function of that
dict). Call after the access check (``selectors.thread_get``): reading a thread is enough to export it."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _

from conversations.branching import Interval, branch_holds
from conversations.models import Conversation, Message, MessageFork, UsageRecord
from conversations.pages import transcript_order
from conversations.selectors import message_list_all, thread_branches
from conversations.signals import thread_export_records
from conversations.usage_selectors import usage_of_thread

EXPORT_VERSION = 2  # 2: versions marked (``current`` on each message, ``forks``)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _usage(record: UsageRecord | None) -> dict[str, Any] | None:
    """A reply's usage as its provider reported it; cost null when its endpoint had no prices."""
    if record is None:
        return None
    return {
        "input_tokens": record.input_tokens,
        "cache_read_tokens": record.cache_read_tokens,
        "cache_write_tokens": record.cache_write_tokens,
        "output_tokens": record.output_tokens,
        "cached_share": record.cached_share,
        "cost": None if record.cost is None else str(record.cost),
        "model": record.model_name,
    }


def _message(
    message: Message, usage: dict[int, UsageRecord], current: tuple[Interval, ...]
) -> dict[str, Any]:
    return {
        "seq": message.seq,
        "current": branch_holds(current, message.seq),  # on the branch the agent reads
        "role": message.role,
        "content": message.content,
        "tool_calls": message.tool_calls or [],
        "tool_call_id": message.tool_call_id,
        "tool_name": message.tool_name,
        "interrupted": message.interrupted,
        "pinned": message.is_pinned,
        "created_at": _iso(message.created_at),
        "attachments": [
            {"name": a.name, "path": a.path, "mime_type": a.mime_type, "size": a.size, "sha256": a.sha256}
            for a in message.attachments.all()
        ],
        "usage": _usage(usage.get(message.pk)),
    }


def thread_export(*, conversation: Conversation) -> dict[str, Any]:
    """Everything the thread holds that a reader may see, in reading order. Compression records come
    from the apps that keep them (``signals.thread_export_records``)."""
    messages = message_list_all(conversation=conversation)
    branches = thread_branches(conversation=conversation)
    usage = {
        r.message_id: r for r in UsageRecord.objects.filter(conversation=conversation, message__isnull=False)
    }
    records: list[dict[str, Any]] = []
    for _receiver, answer in thread_export_records.send(sender=Conversation, conversation=conversation):
        records.extend(answer or [])
    return {
        "format": "agent-platform-thread",
        "version": EXPORT_VERSION,
        "exported_at": _iso(timezone.now()),
        "thread": {
            "thread_id": str(conversation.thread_id),
            "title": conversation.title,
            "agent": {"slug": conversation.agent.slug, "name": conversation.agent.name},
            "owner": conversation.owner.get_username(),
            "created_at": _iso(conversation.created_at),
            "last_activity_at": _iso(conversation.last_activity_at),
        },
        "messages": [_message(m, usage, branches[-1]) for m in transcript_order(list(messages))],
        "forks": _forks(conversation, branches, [m.seq for m in messages]),
        "compression_records": records,
        # Replies, summary and repair calls of the thread, summed (cost null when nothing was priced).
        "usage": usage_of_thread(conversation.pk).as_dict(),
    }


def _forks(
    conversation: Conversation, branches: list[tuple[Interval, ...]], seqs: list[int]
) -> list[dict[str, Any]]:
    """Which messages replaced which, fork by fork (``conversations.branching``): an edit or a
    regeneration ``replaced`` rows by the rows from ``by_seq`` on; a continue made ``restored`` rows
    current again and ``replaced`` the others. ``before_seq``: where the marker stands in the transcript."""
    forks = []
    for number, fork in enumerate(conversation.forks.select_related("message").order_by("id")):
        before, after = branches[number], branches[number + 1]
        later = [seq for seq in seqs if seq >= fork.hidden_to_seq and branch_holds(after, seq)]
        forks.append(
            {
                "kind": fork.kind,
                "message_seq": fork.message.seq,
                "created_at": _iso(fork.created_at),
                "replaced": [s for s in seqs if branch_holds(before, s) and not branch_holds(after, s)],
                "restored": [
                    s
                    for s in seqs
                    if s < fork.hidden_to_seq and branch_holds(after, s) and not branch_holds(before, s)
                ],
                "by_seq": later[0] if later else None,
                "before_seq": later[0] if later else None,  # None: the marker ends the transcript
            }
        )
    return forks


def export_filename(data: dict[str, Any], extension: str) -> str:
    thread = data["thread"]
    stem = slugify(thread["title"], allow_unicode=True)[:60] or "thread"
    return f"{stem}-{thread['thread_id'][:8]}.{extension}"


def export_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _fence(text: str, info: str = "") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _role(message: dict[str, Any]) -> str:
    if message["role"] == Message.Role.USER:
        return _("User")
    if message["role"] == Message.Role.ASSISTANT:
        return _("Assistant")
    return _("Tool result: %(tool)s") % {"tool": message["tool_name"] or _("tool")}


def _span(seqs: list[int]) -> str:
    if not seqs:
        return "–"
    return str(seqs[0]) if len(seqs) == 1 else f"{seqs[0]}–{seqs[-1]}"


def _fork_markdown(fork: dict[str, Any]) -> list[str]:
    """The marker between versions: which messages the next ones replace (or bring back)."""
    words = {"replaced": _span(fork["replaced"]), "message": fork["message_seq"]}
    if fork["kind"] == MessageFork.Kind.EDIT:
        text = _(
            "New version of message %(message)s (edited): it and what follows replace messages %(replaced)s."
        )
    elif fork["kind"] == MessageFork.Kind.REGENERATE:
        text = _("Reply to message %(message)s regenerated: what follows replaces messages %(replaced)s.")
    else:
        words["restored"] = _span(fork["restored"])
        text = _(
            "Continued from an earlier version (message %(message)s): messages %(restored)s are current "
            "again; messages %(replaced)s left the current branch."
        )
    label = _("Versions")
    return [f"> **{label}:** {text % words}", ""]


def _message_markdown(message: dict[str, Any]) -> list[str]:
    marks = [_("pinned")] if message["pinned"] else []
    if not message.get("current", True):
        marks.append(_("earlier version"))
    if message["interrupted"]:
        marks.append(_("stopped"))
    suffix = f" ({', '.join(marks)})" if marks else ""
    lines = [f"## {message['seq']}. {_role(message)}{suffix}", "", f"*{message['created_at']}*", ""]
    if usage := message.get("usage"):
        lines += [_usage_markdown(usage["input_tokens"], usage["cache_read_tokens"], usage["cost"]), ""]
    if message["content"]:
        tool = message["role"] == Message.Role.TOOL
        lines += [_fence(message["content"]) if tool else message["content"], ""]
    for call in message["tool_calls"]:
        name = call.get("name", "") if isinstance(call, dict) else ""
        args = call.get("args", {}) if isinstance(call, dict) else call
        lines += [
            _("Called `%(name)s` with:") % {"name": name},
            "",
            _fence(json.dumps(args, ensure_ascii=False, indent=2), "json"),
            "",
        ]
    if message["attachments"]:
        lines += [f"**{_('Attachments')}**", ""]
        for a in message["attachments"]:
            lines.append(
                f"- {a['name']} ({a['mime_type']}, {a['size']} B) `{a['path']}` SHA-256 `{a['sha256']}`"
            )
        lines.append("")
    return lines


def _usage_markdown(prompt: int, cached: int, cost: str | None) -> str:
    text = _("Usage: %(prompt)s prompt tokens, %(cached)s from the prompt cache") % {
        "prompt": prompt,
        "cached": cached,
    }
    return f"*{text}; {_('cost')} {cost}*" if cost is not None else f"*{text}*"


def _records_markdown(records: list[dict[str, Any]]) -> list[str]:
    lines = [f"## {_('Compression records')}", ""]
    if not records:
        return [*lines, _("None."), ""]
    lines += [
        "| "
        + " | ".join(
            [
                _("When"),
                _("Trigger"),
                _("Level"),
                _("Status"),
                _("Tokens before → after"),
                _("Messages folded"),
                _("History file"),
            ]
        )
        + " |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        tokens = f"{r['before_tokens'] if r['before_tokens'] is not None else '–'} → {r['after_tokens'] if r['after_tokens'] is not None else '–'}"
        cells = [
            r["created_at"] or "",
            r["trigger"],
            r["level"],
            r["status"],
            tokens,
            str(r["compressed_messages"] or 0),
            r["file_path"] or "",
        ]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return [*lines, ""]


def export_markdown(data: dict[str, Any]) -> str:
    thread = data["thread"]
    lines = [
        f"# {thread['title'] or _('Untitled thread')}",
        "",
        f"- {_('Agent')}: {thread['agent']['name']} (`{thread['agent']['slug']}`)",
        f"- {_('Owner')}: {thread['owner']}",
        f"- {_('Thread')}: `{thread['thread_id']}`",
        f"- {_('Exported at')}: {data['exported_at']}",
    ]
    if usage := data.get("usage"):
        prompt = usage["reply_input_tokens"] + usage["summary_input_tokens"] + usage["repair_input_tokens"]
        cached = (
            usage["reply_cache_read_tokens"]
            + usage["summary_cache_read_tokens"]
            + usage["repair_cache_read_tokens"]
        )
        lines.append(f"- {_usage_markdown(prompt, cached, usage['cost']).strip('*')}")
    lines.append("")
    markers: dict[int | None, list[dict[str, Any]]] = {}
    for fork in data.get("forks", []):
        markers.setdefault(fork["before_seq"], []).append(fork)
    for message in data["messages"]:
        for fork in markers.pop(message["seq"], []):
            lines += _fork_markdown(fork)
        lines += _message_markdown(message)
    for waiting in markers.values():  # continues after which nothing was said yet
        for fork in waiting:
            lines += _fork_markdown(fork)
    lines += _records_markdown(data["compression_records"])
    return "\n".join(lines).rstrip("\n") + "\n"
