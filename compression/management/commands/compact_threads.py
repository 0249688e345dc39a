"""Bulk compression of idle threads through the manual-compression service (same lock, same rules).

Safe by default: only threads at the page's hint (``--min-pressure 0.85``) and idle for ``--idle-for
10m``; ``--min-pressure 0 --idle-for 0s`` selects every thread. The dry run plans each thread as the
page's preview does and says what it expects; the run prints each thread's size before and after, and
the tokens saved on its last line are the sum of those rows."""

from __future__ import annotations

import json
import logging
import re
import signal
import threading
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from tqdm import tqdm

from agent_platform.errors import ApplicationError
from agent_platform.models import Agent
from compression.bulk import BulkReport, bulk_compress_one, celery_broker_configured
from compression.selectors import compression_candidates, conversation_is_busy
from compression.services.preview import conversation_compress_preview
from compression.tasks import bulk_compress_enqueue
from context_engine.config import COMPRESSION_CAPABILITY
from context_engine.tokens.messages import format_tokens
from conversations.models import Conversation
from conversations.pages import HINT_RATIO

DEFAULT_IDLE_FOR = "10m"
SMALL_SAVING = "skip: small saving:"  # how the plan marks a thread under BULK_MIN_SAVING_FACTOR
# Libraries that log every HTTP request at INFO: a bulk run's output is its own rows, not theirs.
QUIET_LOGGERS = ("httpx", "httpcore", "openai", "langchain_openai")

_DURATION = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


ANY = "any"


def parse_pressure(value: str) -> float | None:
    if value.strip().lower() == ANY:
        return None
    try:
        pressure = float(value)
    except ValueError as exc:
        raise CommandError(f"Bad pressure {value!r}: a ratio such as 0.85, or 'any'.") from exc
    if pressure < 0:
        raise CommandError("--min-pressure must be 0 or more.")
    return pressure


def parse_duration(value: str) -> timedelta:
    match = _DURATION.match(value.strip().lower())
    if not match:
        raise CommandError(f"Bad duration {value!r}: use a number and a unit, e.g. 30m, 2h, 7d.")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


class Command(BaseCommand):
    help = "Compress the context of idle threads (dry run, synchronous with progress, or Celery fan-out)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--agent", help="Only threads of the agent with this slug.")
        parser.add_argument("--owner", help="Only threads of this username.")
        parser.add_argument(
            "--min-pressure",
            default=str(HINT_RATIO),
            help=f"Only threads at or above this pressure ratio (default {HINT_RATIO}: the page's hint; "
            "'any' includes threads never measured).",
        )
        parser.add_argument(
            "--idle-for",
            default=DEFAULT_IDLE_FOR,
            help=f"Only threads idle at least this long (30m, 2h, 7d; default {DEFAULT_IDLE_FOR}; 'any').",
        )
        parser.add_argument("--limit", type=int, help="At most this many threads, highest pressure first.")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--dry-run", action="store_true", help="Report candidates; write nothing.")
        mode.add_argument(
            "--async", dest="use_async", action="store_true", help="One Celery task per thread."
        )
        parser.add_argument("--queue", help="With --async: the Celery queue to send the tasks to.")
        parser.add_argument("--json", dest="as_json", action="store_true", help="Machine-readable output.")

    def handle(self, *args, **options) -> None:
        filters = self._filters(options)
        if options["use_async"] and not celery_broker_configured():
            raise CommandError("--async needs a Celery broker: set REDIS_URL (or CELERY_BROKER_URL).")
        candidates = list(compression_candidates(**filters))
        if options["dry_run"]:
            self._dry_run(candidates, as_json=options["as_json"])
            return
        # Planned as the dry run plans them: a thread whose saving would not pay for its summary is
        # left alone (``BULK_MIN_SAVING_FACTOR``), and said so.
        plans = {c.pk: _expected(c) for c in candidates}
        small = [(c, plans[c.pk]) for c in candidates if plans[c.pk]["would"].startswith(SMALL_SAVING)]
        candidates = [c for c in candidates if not plans[c.pk]["would"].startswith(SMALL_SAVING)]
        if options["use_async"]:
            self._fan_out(candidates, as_json=options["as_json"], queue=options["queue"], small=small)
        else:
            with _quiet(QUIET_LOGGERS):
                self._run(candidates, as_json=options["as_json"], verbosity=options["verbosity"], small=small)

    def _filters(self, options) -> dict:
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be at least 1.")
        if options["agent"] and not Agent.objects.filter(slug=options["agent"]).exists():
            raise CommandError(f"No agent with slug {options['agent']!r}.")
        user_model = get_user_model()
        if (
            options["owner"]
            and not user_model.objects.filter(**{user_model.USERNAME_FIELD: options["owner"]}).exists()
        ):
            raise CommandError(f"No user {options['owner']!r}.")
        if options["queue"] and not options["use_async"]:
            raise CommandError("--queue only applies with --async.")
        return {
            "agent_slug": options["agent"],
            "min_pressure": parse_pressure(options["min_pressure"]),
            "idle_for": None
            if options["idle_for"].strip().lower() == ANY
            else parse_duration(options["idle_for"]),
            "owner": options["owner"],
            "limit": options["limit"],
        }

    def _dry_run(self, candidates, *, as_json: bool) -> None:
        now = timezone.now()
        rows = [
            {
                "thread": str(c.thread_id),
                "id": c.pk,
                "agent": c.agent.slug,
                "owner": c.owner.get_username(),
                "tokens": c.context_tokens,
                "pressure": c.pressure_ratio,
                "last_activity": c.last_activity_at.isoformat(timespec="seconds"),
                "idle": str(now - c.last_activity_at).split(".")[0],
                **_expected(c),
            }
            for c in candidates
        ]
        if as_json:
            self.stdout.write(json.dumps({"dry_run": True, "candidates": rows}, indent=2))
            return
        header = ("id", "owner", "title", "agent", "pressure", "tokens", "expected_after", "would")
        table = [header] + [tuple("-" if r[k] is None else str(r[k]) for k in header) for r in rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        for row in table:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        self.stdout.write(f"{len(rows)} candidate thread(s); dry run, nothing written.")

    def _fan_out(self, candidates, *, as_json: bool, queue: str | None, small: list) -> None:
        batch = bulk_compress_enqueue(conversation_ids=[c.pk for c in candidates], queue=queue)
        queued = [str(c.thread_id) for c in candidates]
        if as_json:
            skipped = [str(c.thread_id) for c, _plan in small]
            self.stdout.write(
                json.dumps(
                    {"queued": queued, "batch": batch, "queue": queue, "skipped_small_saving": skipped},
                    indent=2,
                )
            )
            return
        for conversation, plan in small:
            self.stdout.write(_row_line(_skipped_row(conversation, plan)))
        self.stdout.write(
            self.style.SUCCESS(f"Queued {len(queued)} thread(s) for compaction (batch {batch}).")
            + (f" {_small_line(len(small))}" if small else "")
        )

    def _run(self, candidates, *, as_json: bool, verbosity: int, small: list) -> None:
        report = BulkReport()
        threads: list[dict] = [_skipped_row(c, plan) for c, plan in small]
        if verbosity >= 1 and not as_json:
            for row in threads:
                self.stdout.write(_row_line(row))
        with (
            _StopBetweenThreads(self.stderr) as stop,
            tqdm(
                total=len(candidates), desc="compacting", unit="thread", disable=as_json or verbosity == 0
            ) as progress,
        ):
            for done, conversation in enumerate(candidates):
                if stop.requested:
                    report.interrupted, report.not_started = True, len(candidates) - done
                    break
                try:
                    outcome = bulk_compress_one(conversation_id=conversation.pk)
                except KeyboardInterrupt:
                    # Second Ctrl-C: this thread's transaction has rolled back, so it is untouched.
                    report.interrupted, report.not_started = True, len(candidates) - done
                    break
                report.add(outcome)
                row = {
                    **_names(conversation),
                    "outcome": outcome.label,
                    "before_tokens": outcome.before_tokens,
                    "after_tokens": outcome.after_tokens,
                    "tokens_saved": outcome.tokens_saved,
                    "error": outcome.error,
                }
                threads.append(row)
                progress.update()
                if verbosity >= 1 and not as_json:
                    with tqdm.external_write_mode():  # above the progress bar, in the command's output
                        self.stdout.write(_row_line(row))
        if as_json:
            self.stdout.write(
                json.dumps(
                    {**report.as_dict(), "skipped_small_saving": len(small), "threads": threads}, indent=2
                )
            )
        else:
            style = self.style.WARNING if report.interrupted or report.failed else self.style.SUCCESS
            self.stdout.write(style(report.summary_line()) + (f" {_small_line(len(small))}" if small else ""))


class _StopBetweenThreads:
    """Ctrl-C asks to stop after the thread in progress (which then finishes, or rolls back, whole);
    a second Ctrl-C aborts that thread too (its transaction rolls back)."""

    def __init__(self, stderr) -> None:
        self.stderr = stderr
        self.requested = False
        self._previous = None

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.stderr.write("\nStopping after the current thread (Ctrl-C again to abandon it).")

    def __enter__(self) -> _StopBetweenThreads:
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _expected(conversation: Conversation) -> dict[str, object]:
    """What compressing ``conversation`` would do, planned as the page's preview plans it (no model
    call, nothing written): ``would`` and the expected size after."""
    if not conversation.agent.has_capability(COMPRESSION_CAPABILITY):
        return {"would": "skip: capability missing", "expected_after": None, "title": conversation.title}
    if conversation_is_busy(conversation):
        return {"would": "skip: busy", "expected_after": None, "title": conversation.title}
    try:
        preview = conversation_compress_preview(conversation=conversation)
    except ApplicationError as exc:
        return {"would": f"skip: {exc.code}", "expected_after": None, "title": conversation.title}
    summary = preview["summary_estimate_tokens"]
    saving = preview["before_tokens"] - preview["estimated_after_tokens"]
    floor = settings.BULK_MIN_SAVING_FACTOR * summary
    if preview["status"] != "ready":
        would = "no change: not enough history"
    elif summary >= preview["folded"]["tokens"]:
        would = "no change: a summary would not be smaller"
    elif saving < floor:
        would = (
            f"{SMALL_SAVING} would save {saving:,} tokens, under {settings.BULK_MIN_SAVING_FACTOR:g} × "
            f"the {summary:,}-token summary it pays for"
        )
    else:
        would = "compress"
    after = preview["estimated_after_tokens"] if would == "compress" else preview["before_tokens"]
    return {"would": would, "expected_after": after, "title": conversation.title}


def _names(conversation: Conversation) -> dict[str, object]:
    """How a report names a thread: its id and owner (titles repeat; a UUID alone says nothing)."""
    return {
        "thread": str(conversation.thread_id),
        "id": conversation.pk,
        "owner": conversation.owner.get_username(),
        "title": conversation.title,
    }


def _skipped_row(conversation: Conversation, plan: dict[str, object]) -> dict[str, object]:
    return {
        **_names(conversation),
        "outcome": "skipped_small_saving",
        "before_tokens": None,
        "after_tokens": None,
        "tokens_saved": 0,
        "error": str(plan["would"]).removeprefix(SMALL_SAVING).strip(),
    }


def _small_line(count: int) -> str:
    return (
        f"Skipped {count} thread(s) whose expected saving is under {settings.BULK_MIN_SAVING_FACTOR:g} × "
        "its summary (BULK_MIN_SAVING_FACTOR)."
    )


def _row_line(row: dict) -> str:
    """``#12 alice "Plans": completed (4.1K → 1.2K, saved 2,900)``; a failure or skip says why."""
    before, after = row["before_tokens"], row["after_tokens"]
    sizes = f"{format_tokens(before)} → {format_tokens(after)}" if before is not None else ""
    saved = f", saved {row['tokens_saved']:,}" if row["tokens_saved"] else ""
    why = f": {row['error']}" if row.get("error") else ""
    detail = f" ({sizes}{saved})" if sizes else ""
    title = f' "{row["title"]}"' if row["title"] else ""
    return f"#{row['id']} {row['owner']}{title}: {row['outcome']}{detail}{why}"


@contextmanager
def _quiet(names: tuple[str, ...]):
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(max(logger.level, logging.WARNING))
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
