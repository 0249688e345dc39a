"""The extractive summary (issue 37 item 1): the folded messages' own sentences and identifiers under
the default prompt's five headings, within a token budget. Deterministic and pure: what the platform
writes when the model's summary is refused, and what the offline model answers a summary prompt with.

Sections: the first request (or the earlier summary's intent), the user's stated requirements, the tools
used and the assistant's latest statements, every identifier of the fold (``identifiers``), and the
last request when it is unanswered. Over budget, items leave from the least useful end of the longest
section first; the headings and a ``None`` stay, so it always reads as a summary."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage

from context_engine.compaction.receipts import receipt_preview
from context_engine.compaction.tool_results import is_saved
from context_engine.formats import SUMMARY_MARKER_KEY, SUMMARY_MARKER_VALUE
from context_engine.summary.fold_plan import receipt_paths, tool_call_args_text
from context_engine.summary.identifiers import identifiers_of
from context_engine.summary.reading import history_read, summary_body
from context_engine.summary.rendering import message_role
from context_engine.summary.validation import DEFAULT_HEADINGS
from context_engine.tokens.messages import TokenProfile, estimate_text
from context_engine.tokens.profiles import DEFAULT_PROFILE

NONE = "None"
INTENT_CHARS = 400
ITEM_CHARS = 200
PROGRESS_ITEMS = 6
REFERENCES_MAX = 40
# The smallest budget the summary is cut to: its headings and ``None`` under each always fit in it.
MIN_BUDGET_TOKENS = 80
# The summary budget: a share of what is folded, bounded (the model's summaries are sized alike,
# ``manual.summary_size``), and never more than a quarter of the trigger.
BUDGET_SHARE = 0.25
BUDGET_MAX_TOKENS = 1200
_REQUIREMENT = re.compile(
    r"\b(must|should|need|needs|prefer|please|don't|do not|never|always|want)\b|请|需要|必须|不要|希望", re.I
)
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Entry:
    """One folded message as the extractive summary reads it: its role, text and the tools it called."""

    role: str
    text: str
    tools: tuple[str, ...] = ()
    summary: bool = False  # an earlier summary (its body: the sections it had)
    references: str = ""  # read for identifiers only: tool-call arguments, a receipt's saved path


def clip(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def message_entries(messages: Sequence[BaseMessage]) -> list[Entry]:
    """The folded messages as entries (an earlier summary message as its body)."""
    entries = []
    for message in messages:
        if message.additional_kwargs.get(SUMMARY_MARKER_KEY) == SUMMARY_MARKER_VALUE:
            entries.append(Entry("human", summary_body(message.text), summary=True))
            continue
        calls = message.tool_calls if isinstance(message, AIMessage) else []
        tools = tuple(str(call.get("name") or "") for call in calls)
        saved = "\n".join(receipt_paths([message]))
        text = receipt_preview(message.text) if is_saved(message) else message.text
        entries.append(
            Entry(message_role(message), text, tools, references=tool_call_args_text(message) + saved)
        )
    return entries


def transcript_entries(transcript: str) -> list[Entry]:
    """A rendered transcript (the summary prompt's ``<messages>`` block) read back as entries: the one
    parser of that format (``reading.history_read``); text outside any message counts as the user's."""
    entries = []
    for section in history_read(transcript):
        for message in section.messages:
            text = "\n".join(line.text for line in message.lines if not line.call)
            calls = [line for line in message.lines if line.call]
            arguments = "\n".join(line.text for line in calls)
            if (body := summary_body(text)) != text:  # an earlier summary, as the prompt renders it
                entries.append(Entry("human", body, summary=True))
                continue
            entries.append(
                Entry(message.role or "human", text, tuple(c.call for c in calls), references=arguments)
            )
    return entries


@dataclass
class _Sections:
    intent: str = NONE
    requirements: list[str] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    next_steps: str = NONE

    def render(self) -> str:
        bodies = (
            self.intent,
            "\n".join(self.requirements) or f"- {NONE} stated.",
            "\n".join(self.progress) or "- Nothing done yet.",
            "\n".join(self.references) or f"- {NONE}",
            self.next_steps,
        )
        return "\n\n".join(
            f"{heading}\n{body}" for heading, body in zip(DEFAULT_HEADINGS, bodies, strict=True)
        )

    def shed(self) -> bool:
        """Drop the least useful item of the longest list (or shorten the intent); False when nothing
        is left to drop."""
        lists = [self.references, self.progress, self.requirements]
        longest = max(lists, key=len)
        if longest:
            longest.pop(1 if longest is self.progress and len(longest) > 1 else -1)
            return True
        if self.next_steps != NONE:
            self.next_steps = NONE
            return True
        if len(self.intent) > 40:
            self.intent = clip(self.intent, len(self.intent) // 2)
            return True
        if self.intent != NONE:
            self.intent = NONE
            return True
        return False


def _earlier(entries: Sequence[Entry]) -> dict[str, list[str]]:
    """The earlier summaries' sections (their bullet lines and text), by heading."""
    found: dict[str, list[str]] = {}
    for entry in entries:
        if not entry.summary:
            continue
        heading = ""
        for line in entry.text.splitlines():
            if line.strip() in DEFAULT_HEADINGS:
                heading = line.strip()
            elif heading and line.strip() and line.strip().strip("-. ") != NONE:
                found.setdefault(heading, []).append(line.strip())
    return found


def _sections(entries: Sequence[Entry]) -> _Sections:
    earlier = _earlier(entries)
    own = [e for e in entries if not e.summary]
    human = [e.text for e in own if e.role == "human" and e.text.strip()]
    said = [e.text for e in own if e.role == "ai" and e.text.strip()]
    tools = [tool for e in own for tool in e.tools if tool]
    intents = earlier.get(DEFAULT_HEADINGS[0]) or human[:1]
    sections = _Sections(intent=clip(" ".join(intents), INTENT_CHARS) if intents else NONE)
    sections.requirements = [
        *earlier.get(DEFAULT_HEADINGS[1], ()),
        *(f"- {clip(t, ITEM_CHARS)}" for t in human if _REQUIREMENT.search(t)),
    ]
    progress = [*earlier.get(DEFAULT_HEADINGS[2], ()), *(f"- Assistant: {clip(t, ITEM_CHARS)}" for t in said)]
    sections.progress = progress[-PROGRESS_ITEMS:]
    if tools:
        sections.progress.insert(0, "- Tools used: " + ", ".join(dict.fromkeys(tools)))
    found = identifiers_of(part for e in entries for part in (e.text, e.references))
    sections.references = [f"- {value}" for value in found][:REFERENCES_MAX]
    if own and own[-1].role == "human" and own[-1].text.strip():
        sections.next_steps = f"- Answer: {clip(own[-1].text, ITEM_CHARS + 100)}"
    return sections


def extractive_budget(*, folded_tokens: int, trigger_tokens: int) -> int:
    """The extractive summary's budget in tokens (see ``BUDGET_SHARE``), at least ``MIN_BUDGET_TOKENS``."""
    share = int(folded_tokens * BUDGET_SHARE)
    return max(min(share, BUDGET_MAX_TOKENS, trigger_tokens // 4), MIN_BUDGET_TOKENS)


def extractive_summary(
    entries: Sequence[Entry], *, budget_tokens: int | None = None, profile: TokenProfile = DEFAULT_PROFILE
) -> str:
    """The extractive summary of ``entries`` (see the module docstring), at most ``budget_tokens`` by
    ``profile``'s estimate (never cut below ``MIN_BUDGET_TOKENS``; None: uncut)."""
    sections = _sections(entries)
    text = sections.render()
    if budget_tokens is None:
        return text
    budget = max(budget_tokens, MIN_BUDGET_TOKENS)
    while estimate_text(text, profile) > budget and sections.shed():
        text = sections.render()
    return text
