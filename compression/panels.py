"""The thread page's compression panels (the compression card, its loss line and the memory panel) and
compression outcomes in words (for the card, the admin list and the API): projections of records,
events and checkpoint values, no ORM, no request. ``compression_panels`` (template tags) renders them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _

from context_engine import events, outcomes
from context_engine.formats import REFERENCE_INDEX_HEADER, REFERENCE_INDEX_SEPARATOR
from context_engine.lines import pointer
from context_engine.state import REFERENCE_INDEX_KEY, SUMMARY_EVENT_KEY
from context_engine.summary import faithfulness
from context_engine.summary.faithfulness import SUMMARY_EXTRACTIVE
from context_engine.summary.identifiers import LossReport
from context_engine.summary.reading import summary_body
from context_engine.summary.reference_index import index_entries
from context_engine.tokens.messages import format_tokens
from conversations.pages import as_int, workdir_path

# The transient states a live event's fields render; recorded outcomes come from the records.
COMPRESSION_STATUSES = ("started", "failed", "cancelled")
JOB_STATUSES = ("queued", "running")  # a job the card shows with its progress and Stop

# --- the compression card and the memory panel ---------------------------------------------------


@dataclass(frozen=True)
class CompressionStatus:
    status: str
    level: str = ""
    before_tokens: int | None = None
    after_tokens: int | None = None
    error: str = ""
    reason: str = ""
    file_path: str = ""
    loss: LossLine | None = None
    job_id: int | None = None  # the compression job under way, with its status (queued, running)
    job_status: str = ""


@dataclass(frozen=True)
class LossLine:
    """The loss report as the compression card shows it: the reach tiers (``LossReport``)."""

    total: int
    kept: int  # in the summary or still verbatim in view
    one_read: int  # in a saved file the view names
    two_reads: int  # only in the history file the view names
    unreachable: int
    lost_identifiers: tuple[str, ...]
    repaired: bool
    indexed: int = 0  # of those in view, the ones the reference index lists
    extractive: bool = False  # the model's summary was refused: this one is the folded messages' own text
    refusal: str = ""  # why the model's summary was refused, in the page's language
    refusal_detail: str = ""  # the engine's own account of it (English: figures, the phrase it matched)
    invented: tuple[str, ...] = ()  # the identifiers it named that the folded messages do not hold


LOSS_LIST_SHOWN = 10


def refusal_words(code: object) -> str:
    """Why a model's summary was refused, by its code (``faithfulness.CODE_*``), in the page's language;
    empty for a code this version does not know (the engine's detail is shown alone then)."""
    words = {
        faithfulness.CODE_ECHO: _("it repeats the summary prompt's own instructions"),
        faithfulness.CODE_LOOP: _("it repeats the same phrases over and over"),
        faithfulness.CODE_EMPTY_SECTION: _("a section is empty"),
        faithfulness.CODE_PLACEHOLDER: _("a section holds only a placeholder"),
        faithfulness.CODE_UNRELATED: _("it shares too little with the messages it summarizes"),
        faithfulness.CODE_INVENTED: _("it names identifiers that occur nowhere in what it summarizes"),
        faithfulness.CODE_NOT_A_SUMMARY: _("the model's answer is not a summary"),
        faithfulness.CODE_BREAKER_OPEN: _("model summaries are paused after repeated refusals"),
    }
    return words.get(str(code), "")


def loss_line_from(value: Any) -> LossLine | None:
    """A loss report (a dict, or its JSON from a query string; a record from before the tiers reads as
    ``LossReport.from_dict`` says) reduced to the card's line; ``None`` when nothing was folded."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    report = LossReport.from_dict(value)
    refusal = value.get("refusal") if isinstance(value, Mapping) else None
    refusal = refusal if isinstance(refusal, Mapping) else {}
    extractive = isinstance(value, Mapping) and value.get("summary_kind") == SUMMARY_EXTRACTIVE
    if not report.total and not extractive:
        return None
    invented = refusal.get("invented_identifiers")
    return LossLine(
        total=report.total,
        kept=report.in_summary + report.in_view,
        one_read=report.one_read,
        two_reads=report.two_reads,
        unreachable=report.unreachable,
        lost_identifiers=tuple(i[:200] for i in report.lost_identifiers[:LOSS_LIST_SHOWN]),
        repaired=value.get("repaired") is True or value.get("repaired") == "true",
        indexed=as_int(value.get("indexed")) or 0,
        extractive=extractive,
        refusal=refusal_words(refusal.get("code")) or str(refusal.get("reason") or "")[:300],
        refusal_detail=str(refusal.get("reason") or "")[:300],
        invented=tuple(str(i)[:200] for i in invented[:LOSS_LIST_SHOWN])
        if isinstance(invented, list)
        else (),
    )


def compression_status_from(data: Mapping[str, Any] | None) -> CompressionStatus | None:
    """A compression event or manual-compression result reduced to what the status line shows."""
    if not data:
        return None
    status = str(data.get("status") or "")
    if status not in COMPRESSION_STATUSES:
        return None
    return CompressionStatus(
        status=status,
        level=str(data.get("level") or ""),
        before_tokens=as_int(data.get("before_tokens")),
        after_tokens=as_int(data.get("after_tokens")),
        error=str(data.get("error") or data.get("message") or "")[:500],
        reason=str(data.get("reason") or "")[:200],
        file_path=workdir_path(data.get("file_path")),
        loss=loss_line_from(data.get("loss_report")),
        job_id=as_int(data.get("job_id")),
        job_status=job_status if (job_status := str(data.get("job_status") or "")) in JOB_STATUSES else "",
    )


@dataclass(frozen=True)
class CompressionCard:
    """The latest compression as an event in time (what happened then, never the current size)."""

    status: str  # started | completed | failed | cancelled (a job stopped before its apply)
    kind: str = "compression"  # compression | undo
    trigger: str = ""  # auto | manual | bulk | undo
    level: str = ""
    outcome: str = ""
    reason: Mapping[str, Any] | None = None
    at: datetime | None = None
    before_tokens: int | None = None
    after_tokens: int | None = None
    compressed_messages: int | None = None
    file_path: str = ""
    saved_files: tuple[str, ...] = ()
    error: str = ""
    undoable: bool = False
    loss: LossLine | None = None  # where the folded identifiers went (a summary's loss report)
    job_id: int | None = None  # the compression job under way, with its status (queued, running)
    job_status: str = ""
    failures: FailureStreak | None = None  # automatic summaries failing since the latest applied one


@dataclass(frozen=True)
class FailureStreak:
    """Automatic summaries that failed since the latest applied summary (``summary_failure_streak``)."""

    count: int
    since: datetime | None
    kind: str  # the latest failure's ``context_engine.events.failure_kind``

    @property
    def kind_words(self) -> str:
        return failure_kind_words(self.kind)

    @property
    def names_the_error(self) -> bool:
        """The kind alone says it for a provider's refusal; otherwise the engine's words add what."""
        return self.kind not in (
            events.RATE_LIMIT,
            events.TIMEOUT,
            events.UNREACHABLE,
            events.REFUSED,
            events.SERVER_ERROR,
        )


def failure_streak_from(value: Mapping[str, Any] | None) -> FailureStreak | None:
    if not value or not as_int(value.get("count")):
        return None
    since = value.get("since")
    return FailureStreak(
        count=as_int(value["count"]) or 0,
        since=since if isinstance(since, datetime) else None,
        kind=str(value.get("kind") or ""),
    )


def hint_standing(*, failures: FailureStreak | None, latest: Mapping[str, Any] | None) -> str:
    """What the "it will be compressed automatically" hint may promise: ``"failing"`` (the summary
    model keeps failing), ``"stuck"`` (the latest compression could not fold enough), or ``""``."""
    if failures is not None:
        return "failing"
    if latest and not latest.get("stopped") and latest.get("outcome") == outcomes.BUDGET_UNREACHABLE:
        return "stuck"
    return ""


@dataclass(frozen=True)
class IndexLink:
    """One entry of the reference index: an identifier and the file line that holds it."""

    value: str
    kind: str
    path: str
    line: int

    @property
    def pointer(self) -> str:
        return pointer(self.path, self.line)

    @property
    def short(self) -> str:
        """The pointer with the file's name only (the link's title carries the whole path)."""
        return pointer(self.path.rsplit("/", 1)[-1], self.line)


@dataclass(frozen=True)
class Memory:
    """What the model currently works from: the summary, the transcript messages it stands for, and
    how many follow it word for word."""

    active: bool
    summary_text: str = ""
    summary_tokens: int = 0
    file_path: str = ""
    folded_last_seq: int | None = None  # the page's number (1..n on the branch) of the last one folded
    kept_count: int = 0
    message_count: int = 0
    # The reference index after the summary (issue 25): what the agent can look up, each with its line.
    index: tuple[IndexLink, ...] = ()
    index_omitted: int = 0
    # Messages before the cutoff the model still reads word for word after the summary (pinned).
    pinned_seqs: tuple[int, ...] = ()  # their numbers on the page
    pinned_anchors: tuple[int, ...] = ()  # their transcript seqs (the page's anchors), same order

    @property
    def pinned_links(self) -> list[tuple[int, int]]:
        """(anchor seq, number shown) of each pinned message the panel names."""
        anchors = self.pinned_anchors or self.pinned_seqs
        return list(zip(anchors, self.pinned_seqs, strict=False))

    @property
    def folded_count(self) -> int:
        """The transcript messages only the summary stands for (pinned ones are read word for word)."""
        last = self.folded_last_seq or 0
        return last - sum(1 for seq in self.pinned_seqs if seq <= last)


def compression_card(
    record: Mapping[str, Any] | None,
    *,
    compressing: bool = False,
    can_undo: bool = False,
    job: Mapping[str, Any] | None = None,
    failures: FailureStreak | None = None,
) -> CompressionCard | None:
    """The card for the thread's latest compression record (``compression_latest``), or the spinner
    while one is under way (with its ``job``'s progress and Stop when it is a job). ``can_undo``: the
    state holds a summary the undo would remove; ``failures``: the automatic summaries failing since
    the latest applied one, told in words on a failed automatic summary's card."""
    if job and job.get("status") in JOB_STATUSES:
        return CompressionCard(status="started", job_id=as_int(job.get("id")), job_status=str(job["status"]))
    if job and job.get("status") == "cancelled" and (not record or job["created_at"] > record["created_at"]):
        return CompressionCard(status="cancelled", at=job.get("finished_at"))
    if compressing:
        return CompressionCard(status="started")
    if record and record.get("stopped"):
        return CompressionCard(
            status="cancelled", trigger=str(record.get("trigger") or ""), at=record.get("created_at")
        )
    if not record or record.get("status") not in ("completed", "failed", "no_op"):
        return None
    undo = record.get("trigger") == "undo"
    status = "failed" if record.get("status") == "failed" else "completed"
    outcome = str(record.get("outcome") or "")
    if not outcome and status == "completed" and not undo:  # records from before outcomes existed
        outcome = (
            outcomes.NO_CHANGE
            if record.get("status") == "no_op"
            else (outcomes.SUMMARIZED if record.get("level") == "summary" else outcomes.COMPACTED)
        )
    reason = record.get("reason_detail") or None
    if not reason and record.get("reason"):
        reason = {"code": record.get("reason")}
    return CompressionCard(
        status=status,
        kind="undo" if undo else "compression",
        trigger=str(record.get("trigger") or ""),
        level=str(record.get("level") or ""),
        outcome="" if undo else outcome,
        reason=reason,
        at=record.get("created_at"),
        before_tokens=as_int(record.get("before_tokens")),
        after_tokens=as_int(record.get("after_tokens")),
        compressed_messages=as_int(record.get("compressed_messages")),
        file_path=workdir_path(record.get("file_path")),
        saved_files=tuple(p for p in map(workdir_path, record.get("saved_files") or ()) if p),
        error=str(record.get("error") or "")[:500],
        undoable=(can_undo and not undo and status == "completed" and record.get("level") == "summary"),
        loss=None if undo else loss_line_from(record.get("loss_report")),
        failures=failures if status == "failed" and record.get("trigger") == "auto" else None,
    )


def memory_from(
    values: Mapping[str, Any],
    *,
    summary_tokens: int | None,
    folded_last_seq: int | None,
    pinned_seqs: tuple[int, ...] = (),
    pinned_anchors: tuple[int, ...] = (),
) -> Memory:
    """What the model works from, given the checkpoint ``values`` and the transcript seq of the last
    message the summary folded (``conversations.selectors.thread_memory`` looks it up)."""
    messages = list(values.get("messages") or [])
    event = values.get(SUMMARY_EVENT_KEY)
    summary = event.get("summary_message") if isinstance(event, Mapping) else None
    cutoff = event.get("cutoff_index") if isinstance(event, Mapping) else None
    if summary is None or not isinstance(cutoff, int):
        return Memory(active=False, message_count=len(messages))
    text = getattr(summary, "content", "")
    text = text if isinstance(text, str) else str(text)
    index = event.get(REFERENCE_INDEX_KEY)
    links = tuple(
        IndexLink(e["value"][:200], e["kind"], path, e["line"])
        for e in index_entries(index)
        if (path := workdir_path(e["path"]))
    )
    return Memory(
        active=True,
        # The index is shown below the summary: cut at its header, the last one (a summary may quote one).
        summary_text=summary_body(
            text.rpartition(REFERENCE_INDEX_SEPARATOR + REFERENCE_INDEX_HEADER)[0]
            if isinstance(index, Mapping) and REFERENCE_INDEX_HEADER in text
            else text
        ),
        summary_tokens=int(summary_tokens or 0),
        file_path=workdir_path(event.get("file_path")),
        folded_last_seq=folded_last_seq,
        kept_count=max(len(messages) - cutoff, 0),
        message_count=len(messages),
        index=links,
        index_omitted=as_int(index.get("omitted")) or 0 if isinstance(index, Mapping) else 0,
        pinned_seqs=tuple(pinned_seqs),
        pinned_anchors=tuple(pinned_anchors),
    )


# --- outcomes in words (the card, the admin list, the API) ------------------------------------------


def failure_kind_words(kind: Any) -> str:
    """Why a summary call failed (``context_engine.events.failure_kind``), in a few words."""
    words = {
        events.RATE_LIMIT: _("rate limit"),
        events.TIMEOUT: _("timed out"),
        events.UNREACHABLE: _("could not be reached"),
        events.REFUSED: _("request refused"),
        events.SERVER_ERROR: _("server error"),
        events.NOT_A_SUMMARY: _("its answer was not a usable summary"),
        events.FILE_ERROR: _("a file could not be saved"),
    }
    return str(words.get(str(kind or ""), _("error")))


def outcome_label(outcome: Any) -> str:
    labels = {
        outcomes.COMPACTED: _("Compacted"),
        outcomes.SUMMARIZED: _("Summarized"),
        outcomes.NO_CHANGE: _("No change needed"),
        outcomes.BUDGET_UNREACHABLE: _("Could not reach the budget"),
    }
    return str(labels.get(str(outcome or ""), outcome or ""))


def reason_text(reason: Mapping[str, Any] | None) -> str:
    """E.g. "the latest message alone is 27.7K tokens, above the 4.1K trigger"; ``""`` for none."""
    if not isinstance(reason, Mapping) or not reason.get("code"):
        return ""
    code = str(reason["code"])
    values = {
        "tokens": format_tokens(reason.get("tokens")),
        "trigger": format_tokens(reason.get("trigger")),
        "messages": reason.get("messages") or 0,
        "folded": format_tokens(reason.get("folded")),
    }
    texts = {
        outcomes.LATEST_MESSAGE_TOO_LARGE: _(
            "the latest message alone is %(tokens)s tokens, above the %(trigger)s trigger"
        ),
        outcomes.MESSAGE_TOO_LARGE: _(
            "one recent message alone is %(tokens)s tokens, above the %(trigger)s trigger"
        ),
        outcomes.OVERHEAD_TOO_LARGE: _(
            "the system prompt and tool descriptions alone are %(tokens)s tokens, above the %(trigger)s trigger"
        ),
        outcomes.KEPT_MESSAGES_TOO_LARGE: _(
            "the %(messages)s most recent messages, which are always kept, bring the request to %(tokens)s "
            "tokens, above the %(trigger)s trigger"
        ),
        outcomes.INSUFFICIENT_HISTORY: _(
            "there is no older history to fold: the recent messages are always kept as they are"
        ),
        outcomes.SPEND_GUARD: _("the hourly allowance for summary calls is used up"),
        outcomes.SUMMARY_NOT_SMALLER: _(
            "the summary (%(tokens)s tokens) would not have been smaller than the %(folded)s tokens it "
            "folds, so nothing was changed"
        ),
    }
    text = texts.get(code)
    return text % values if text else code
