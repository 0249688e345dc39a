"""Summaries and their history: history-file sections, the summary message and prompt, strict summary
validation, the ``_summarization_event`` (with its global cutoff) and effective-message reconstruction.
"""

from __future__ import annotations

import re
import string
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from langchain_core.messages import BaseMessage, HumanMessage

from context_engine.compaction.previews import generic_preview
from context_engine.errors import EmptySummaryError, ErrorSummaryError, NotASummaryError, SummaryError
from context_engine.formats import (
    CONVERSATION_HISTORY_DIR,
    DEFAULT_SUMMARY_PROMPT,
    HISTORY_FILE_TEMPLATE,
    HISTORY_SECTION_TEMPLATE,
    REFERENCE_INDEX_HEADER,
    REFERENCE_INDEX_SEPARATOR,
    SESSION_ID_PREFIX,
    SUMMARY_MARKER_KEY,
    SUMMARY_MARKER_VALUE,
    SUMMARY_MESSAGE_NO_FILE_TEMPLATE,
    SUMMARY_MESSAGE_TEMPLATE,
)
from context_engine.lines import next_line_number
from context_engine.state import PINNED_IDS_KEY, REFERENCE_INDEX_KEY, SummarizationEvent
from context_engine.store import ResultStore
from context_engine.summary.cutoff import is_summary_message
from context_engine.summary.error_texts import error_summary_shape
from context_engine.summary.rendering import render_message, render_messages
from context_engine.summary.validation import DEFAULT_RULE, SummaryRule, summary_problem
from context_engine.tokens.messages import (
    DEFAULT_PROFILE,
    TokenProfile,
    estimate_message,
    estimate_text,
    messages_tokens,
    without_estimate,
)

MESSAGES_PLACEHOLDER = "{messages}"


class ReferenceIndexLike(Protocol):
    """``summary.reference_index.ReferenceIndex`` as the event needs it (that module imports this one)."""

    @property
    def text(self) -> str: ...

    def as_dict(self) -> dict[str, Any]: ...


_SESSION_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,128}")

__all__ = [
    "build_summarization_event",
    "build_summary_message",
    "effective_messages",
    "format_summary_prompt",
    "global_cutoff",
    "history_next_line",
    "history_path",
    "is_summary_message",
    "SESSION_ID_DIGITS",
    "new_session_id",
    "render_history_section",
    "summary_text",
    "valid_event",
    "validate_summary_prompt",
]


# --- history file ------------------------------------------------------------------------------


SESSION_ID_DIGITS = 39  # a uuid4 as a zero-padded decimal number: every id has the same token estimate


def new_session_id() -> str:
    """A random session id. Decimal digits of a fixed length, not hex: the estimator counts any two of
    them alike (hex strings vary by ±10 tokens with their runs of letters and digits), so a preview,
    which names a stand-in before the id is drawn, sizes a first summary's message to the token."""
    return f"{SESSION_ID_PREFIX}{uuid.uuid4().int:0{SESSION_ID_DIGITS}d}"


def history_path(session_id: str) -> str:
    """``outputs/conversation_history/<session_id>.md``; rejects ids that are not ``[A-Za-z0-9_-]``."""
    if not _SESSION_ID_RE.fullmatch(session_id or ""):
        raise ValueError(f"Unsafe summarization session id: {session_id!r}")
    return HISTORY_FILE_TEMPLATE.format(directory=CONVERSATION_HISTORY_DIR, session_id=session_id)


def history_next_line(store: ResultStore, path: str) -> int:
    """The line of ``path`` where the next section will start (1 when there is no file yet)."""
    return next_line_number(store.read_text(path)) if store.exists(path) else 1


def history_unappend(store: ResultStore, path: str, section: str) -> bool:
    """Take ``section`` back off the end of the history file at ``path`` (a summary that was appended and
    then not applied); False when the file no longer ends with it (something was appended since)."""
    text = store.read_text(path)
    if not section or not text.endswith(section):
        return False
    store.write_text(path, text[: -len(section)])
    return True


def render_history_section(messages: Sequence[BaseMessage], *, now: datetime | None = None) -> str:
    """A timestamped section for the history file; earlier summary messages are left out."""
    kept = [m for m in messages if not is_summary_message(m)]
    timestamp = (now or datetime.now(UTC)).isoformat()
    return HISTORY_SECTION_TEMPLATE.format(timestamp=timestamp, messages=render_messages(kept))


# --- summary message and event -----------------------------------------------------------------


def build_summary_message(summary: str, *, file_path: str | None, index: str = "") -> HumanMessage:
    """The summary message; ``index`` (the reference index's text) follows the summary in it, so it
    stands after the summary and before the pinned messages."""
    if file_path:
        content = SUMMARY_MESSAGE_TEMPLATE.format(file_path=file_path, summary=summary)
    else:
        content = SUMMARY_MESSAGE_NO_FILE_TEMPLATE.format(summary=summary)
    if index:
        content += REFERENCE_INDEX_SEPARATOR + index
    return HumanMessage(content=content, additional_kwargs={SUMMARY_MARKER_KEY: SUMMARY_MARKER_VALUE})


def without_index(view: list[BaseMessage]) -> list[BaseMessage]:
    """``view`` with the reference index taken out of its leading summary message (the index yields
    first when the request reaches ``T``: what it lists stays in the history file and searchable);
    ``view`` itself when it holds no index."""
    if not view or not is_summary_message(view[0]) or not isinstance(view[0].content, str):
        return view
    content = view[0].content
    at = content.rfind(REFERENCE_INDEX_SEPARATOR + REFERENCE_INDEX_HEADER)
    if at < 0:
        return view
    metadata = without_estimate(dict(view[0].response_metadata))
    lean = view[0].model_copy(update={"content": content[:at], "response_metadata": metadata})
    return [lean, *view[1:]]


def global_cutoff(previous: Mapping[str, Any] | None, local_cutoff: int, *, lead: int = 1) -> int:
    """The state index for a cutoff found in effective messages, whose first ``lead`` entries (the
    previous summary and the pinned messages it kept) stand before ``messages[previous cutoff:]``."""
    if not previous:
        return local_cutoff
    return int(previous["cutoff_index"]) + local_cutoff - lead


def build_summarization_event(
    *,
    previous: Mapping[str, Any] | None,
    local_cutoff: int,
    summary_message: HumanMessage,
    file_path: str | None,
    lead: int = 1,
    pinned_ids: Sequence[str] = (),
    reference_index: ReferenceIndexLike | None = None,
) -> SummarizationEvent:
    event: SummarizationEvent = {
        "cutoff_index": global_cutoff(previous, local_cutoff, lead=lead),
        "summary_message": summary_message,
        "file_path": file_path,
    }
    if pinned_ids:
        event[PINNED_IDS_KEY] = list(pinned_ids)
    if reference_index is not None and reference_index.text:
        event[REFERENCE_INDEX_KEY] = reference_index.as_dict()
    return event


def valid_event(event: Any) -> Mapping[str, Any] | None:
    """A well-formed ``_summarization_event`` from state, else None (a malformed one hides nothing)."""
    if not isinstance(event, Mapping):
        return None
    cutoff, summary = event.get("cutoff_index"), event.get("summary_message")
    if isinstance(cutoff, int) and cutoff >= 0 and isinstance(summary, BaseMessage):
        return event
    return None


def effective_messages(messages: Sequence[BaseMessage], event: Mapping[str, Any] | None) -> list[BaseMessage]:
    """What the model sees: ``[summary, *pinned, *messages[cutoff:]]`` after a summary, else all
    messages; ``pinned`` are the messages before the cutoff that the event keeps verbatim, in order.

    A malformed event (no summary message, a cutoff that is not a non-negative int) is ignored and all
    messages are returned. A cutoff past the end keeps only the summary: it still stands for them.
    """
    if not event:
        return list(messages)
    summary = event.get("summary_message")
    cutoff = event.get("cutoff_index")
    if not isinstance(summary, BaseMessage) or not isinstance(cutoff, int) or cutoff < 0:
        return list(messages)
    pinned = event.get(PINNED_IDS_KEY)
    if pinned and isinstance(pinned, list):
        keep = set(pinned)
        return [summary, *(m for m in messages[:cutoff] if m.id in keep), *messages[cutoff:]]
    return [summary, *messages[cutoff:]]


# --- summary prompt and result -----------------------------------------------------------------


def validate_summary_prompt(prompt: str) -> None:
    """Raise ``ValueError`` unless ``{messages}`` is the prompt's one and only placeholder.

    Exactly ``{messages}``, once: no format spec (``{messages:>99999999999}`` would allocate gigabytes),
    no conversion (``{messages!r}``), no attribute or index access (``{messages.__class__}``), no other
    name. Literal braces are doubled (``{{ }}``).
    """
    try:
        fields = [
            (name, spec, conversion)
            for _literal, name, spec, conversion in string.Formatter().parse(prompt)
            if name is not None
        ]
    except ValueError as exc:
        raise ValueError(
            f"The summary prompt does not parse ({exc}): double any literal braces, {{{{ }}}}."
        ) from exc
    if not fields:
        raise ValueError("The summary prompt must contain {messages}.")
    for name, spec, conversion in fields:
        if name != "messages" or spec or conversion is not None:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise ValueError(
                f"The summary prompt may use {{messages}} exactly as written, nothing else: {shown} is not "
                "allowed (double literal braces: {{ }})."
            )
    if len(fields) > 1:
        raise ValueError("The summary prompt must contain {messages} exactly once.")


XML_TAG_TOKENS = 8  # <message type="...">, </message> and the separating newline


def _fill(prompt: str, rendered: str) -> str:
    try:
        validate_summary_prompt(prompt)
    except ValueError:  # a stored prompt from before validation: substitute literally, never format
        return prompt.replace(MESSAGES_PLACEHOLDER, rendered).rstrip()
    return prompt.format(messages=rendered).rstrip()


class _Parts:
    """The messages as the summarizer's input holds them, each rendered and costed at most once and
    only when asked: trimming reaches from the newest back only as far as the budget does."""

    def __init__(self, messages: Sequence[BaseMessage], profile: TokenProfile) -> None:
        self.messages = messages
        self.profile = profile
        self._parts: dict[int, str] = {}
        self._costs: dict[int, int] = {}

    def part(self, index: int) -> str:
        if index not in self._parts:
            self._parts[index] = render_message(self.messages[index])
        return self._parts[index]

    def cost(self, index: int) -> int:
        # The message's own estimate (stored, or cached since compaction) plus its XML tags: choosing
        # what fits never re-reads the text; the filled prompt is checked exactly.
        if index not in self._costs:
            self._costs[index] = estimate_message(self.messages[index], self.profile) + XML_TAG_TOKENS
        return self._costs[index]


@dataclass(frozen=True)
class _Trim:
    """The messages a trimmed summarizer input holds: ``lead`` (an earlier summary leading them) and
    ``kept`` (the most recent messages, in order); with none kept, a preview of the latest message
    within ``room`` tokens (the lead's cost taken off)."""

    lead: tuple[int, ...]
    kept: tuple[int, ...]
    room: int

    def body(self, parts: _Parts) -> str:
        if self.kept:
            return "\n".join(parts.part(i) for i in self.lead + self.kept)
        lead_cost = sum(parts.cost(i) for i in self.lead)
        latest = generic_preview(
            parts.part(len(parts.messages) - 1),
            limit_tokens=max(self.room - lead_cost, 0),
            profile=parts.profile,
        )
        return "\n".join([*(parts.part(i) for i in self.lead), latest]) if latest else ""

    def smaller(self, parts: _Parts, over: int) -> _Trim:
        """Drop the oldest kept messages worth ``over`` tokens (keeping one), then the earlier summary,
        then the last kept message, then shrink the preview's room; raise when nothing is left."""
        if len(self.kept) > 1:
            drop, dropped = 1, parts.cost(self.kept[0])
            while len(self.kept) - drop > 1 and dropped < over:
                dropped += parts.cost(self.kept[drop])
                drop += 1
            return replace(self, kept=self.kept[drop:])
        if self.lead:
            return replace(self, lead=())
        if self.kept:
            return replace(self, kept=())
        if self.room > 0:
            return replace(self, room=int(self.room * 0.9))
        raise SummaryError("No part of the conversation fits the summarizer's input budget.")


def _newest_that_fit(parts: _Parts, budget: int) -> _Trim:
    """A leading earlier summary (when it takes at most half the budget), then the most recent
    messages whose costs fit what is left."""
    last = len(parts.messages) - 1
    leads = is_summary_message(parts.messages[0]) and last > 0 and parts.cost(0) <= budget // 2
    lead = (0,) if leads else ()
    spent = sum(parts.cost(i) for i in lead)
    newest_first: list[int] = []
    for index in range(last, len(lead) - 1, -1):
        if spent + parts.cost(index) > budget:
            break
        newest_first.append(index)
        spent += parts.cost(index)
    return _Trim(lead, tuple(reversed(newest_first)), room=budget)


def _trimmed_prompt(prompt: str, parts: _Parts, trim: _Trim, max_tokens: int) -> str:
    """``prompt`` filled with the trim's body, made smaller until the filled prompt fits (the costs
    that chose it are estimates)."""
    while True:
        body = trim.body(parts)
        over = 0
        if body:
            filled = _fill(prompt, body)
            over = estimate_text(filled, parts.profile) - max_tokens
            if over <= 0:
                return filled
        trim = trim.smaller(parts, over)


def format_summary_prompt(
    messages: Sequence[BaseMessage],
    *,
    prompt: str = DEFAULT_SUMMARY_PROMPT,
    max_tokens: int | None = None,
    profile: TokenProfile = DEFAULT_PROFILE,
) -> str:
    """The summarizer's input: ``prompt`` filled with the messages (verbatim), trimmed to ``max_tokens``.

    Trimming keeps a leading earlier summary and then the most recent messages that fit; if not even
    the latest message fits, a HEAD/MIDDLE/TAIL preview of it is used. Raises ``SummaryError`` when
    there is nothing to summarize or the prompt alone exceeds the budget.
    """
    if not messages:
        raise SummaryError("There is no conversation history to summarize.")
    # Render and estimate the whole history only when it may fit: the messages' own (stored) estimates
    # say at no cost when it cannot, and rendering 1,000 messages to learn that was the slow part.
    if max_tokens is None or messages_tokens(messages, profile) <= max_tokens:
        filled = _fill(prompt, render_messages(messages))
        if max_tokens is None or estimate_text(filled, profile) <= max_tokens:
            return filled
    budget = max_tokens - estimate_text(_fill(prompt, ""), profile) - 1
    if budget <= 0:
        raise SummaryError("The summary prompt alone exceeds the summarizer's input budget.")
    parts = _Parts(messages, profile)
    return _trimmed_prompt(prompt, parts, _newest_that_fit(parts, budget), max_tokens)


def summary_text(response: BaseMessage | str, rule: SummaryRule = DEFAULT_RULE) -> str:
    """The stripped summary text of a model response, once it reads as a summary under ``rule``.

    Raises ``EmptySummaryError`` when empty, ``ErrorSummaryError`` when it is an error's text and
    ``NotASummaryError`` when it is anything else that is not a summary (see ``summary_problem``):
    none of them may ever become the thread's memory."""
    text = response if isinstance(response, str) else str(response.text)
    text = text.strip()
    if not text:
        raise EmptySummaryError("The summary model returned an empty summary.")
    if shape := error_summary_shape(text):
        raise ErrorSummaryError(
            f"The summary model answered with an error instead of a summary ({shape}): {text[:300]}"
        )
    metadata = {} if isinstance(response, str) else response.response_metadata
    if problem := summary_problem(text, rule, metadata=metadata):
        raise NotASummaryError(f"The summary model's answer is not a summary ({problem}): {text[:300]}")
    return text
