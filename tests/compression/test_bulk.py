"""Bulk compaction: the compact_threads command (dry run, filters, summary, Ctrl-C), the admin actions,
and the Celery task's retry and idempotency (run eagerly here; the real worker is in test_bulk_celery)."""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from compression.management.commands.compact_threads import parse_duration
from compression.models import CompressionRecord
from conversations.models import AgentRun, Conversation
from tests.compression._threads import (
    bulk_records,
    compact,
    compact_text,
    selected,
    snapshot,
    without_ledger,
    workdir_files,
)
from tests.context_engine.chats import SUMMARY, USAGE
from tests.context_engine.fakes import ScriptedChatModel

pytestmark = [pytest.mark.django_db, pytest.mark.services]
EVERY_THREAD = ("--min-pressure", "any", "--idle-for", "any")


# --- dry run ----------------------------------------------------------------------------------------


def test_dry_run_reports_pressure_and_writes_nothing(make_thread, summarizer, agent):
    model = summarizer()
    hot = make_thread("hot", pressure=0.97)
    busy = make_thread("busy", pressure=0.93)
    AgentRun.objects.create(conversation=busy, status=AgentRun.Status.RUNNING)
    waiting = make_thread("waiting", pressure=0.91)
    AgentRun.objects.create(conversation=waiting, status=AgentRun.Status.INTERRUPTED)
    before = {t.pk: snapshot(t) for t in (hot, busy, waiting)}
    columns = Conversation.objects.values_list("pk", "pressure_ratio", "context_tokens", "usage_updated_at")
    columns_before = sorted(columns)

    text = compact_text("--dry-run")
    report = compact("--dry-run")

    assert "pressure" in text.splitlines()[0] and "expected_after" in text.splitlines()[0]
    assert "3 candidate thread(s); dry run, nothing written." in text
    rows = {row["thread"]: row for row in report["candidates"]}
    assert rows[str(hot.thread_id)]["would"] == "compress"
    assert rows[str(hot.thread_id)]["tokens"] == 97_000
    assert rows[str(hot.thread_id)]["pressure"] == 0.97
    assert rows[str(busy.thread_id)]["would"] == "skip: busy"
    assert rows[str(waiting.thread_id)]["would"] == "skip: busy"
    assert not CompressionRecord.objects.exists()
    assert model.summary_prompts == []
    assert {t.pk: snapshot(t) for t in (hot, busy, waiting)} == before
    assert sorted(columns) == columns_before
    assert all(workdir_files(t) == [] for t in (hot, busy, waiting))


def test_dry_run_says_when_the_agent_cannot_compress(make_thread, agent):
    thread = make_thread("no capability")
    agent.capabilities = []
    agent.save()
    [row] = compact("--dry-run")["candidates"]
    assert (row["thread"], row["would"]) == (str(thread.thread_id), "skip: capability missing")


# --- filters ----------------------------------------------------------------------------------------


@pytest.fixture
def population(make_thread, other_user, agent):
    from agent_platform.models import Agent

    Agent.objects.create(name="Other agent", slug="other-agent")
    return {
        "a": make_thread("a", pressure=0.95, idle=timedelta(hours=5)),
        "b": make_thread("b", pressure=0.80, idle=timedelta(minutes=30)),
        "c": make_thread("c", pressure=0.99, idle=timedelta(days=2), owner=other_user),
        "d": make_thread("d", pressure=0.86, idle=timedelta(hours=2, minutes=1), agent_slug="other-agent"),
        "e": make_thread("e", pressure=None, idle=timedelta(days=9)),  # never measured
        "f": make_thread("f", pressure=0.95, idle=timedelta(hours=1)),  # ties with a: older activity first
    }


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), "c a f d b e"),
        (("--agent", "other-agent"), "d"),
        (("--agent", "test-agent"), "c a f b e"),
        (("--owner", "bob"), "c"),
        (("--owner", "alice"), "a f d b e"),
        (("--min-pressure", "0.86"), "c a f d"),
        (("--min-pressure", "0.9"), "c a f"),
        (("--idle-for", "2h"), "c a d e"),
        (("--idle-for", "90m"), "c a d e"),
        (("--idle-for", "1d"), "c e"),
        (("--idle-for", "1w"), "e"),
        (("--limit", "2"), "c a"),
        (("--min-pressure", "0.85", "--idle-for", "2h", "--owner", "alice", "--limit", "5"), "a d"),
        (("--agent", "test-agent", "--min-pressure", "0.5", "--limit", "3"), "c a f"),
    ],
)
def test_filters_select_the_right_threads_highest_pressure_first(population, args, expected):
    names = {str(t.thread_id): name for name, t in population.items()}
    # Every thread unless the case says otherwise (the last of a repeated option wins).
    assert " ".join(names[t] for t in selected(*EVERY_THREAD, *args)) == expected


def test_by_default_only_threads_at_the_hint_and_idle_for_ten_minutes_are_selected(population, make_thread):
    names = {str(t.thread_id): name for name, t in population.items()}
    recent = make_thread("recent", pressure=0.99, idle=timedelta(minutes=2))  # still being used
    assert " ".join(names.get(t, "recent") for t in selected()) == "c a f d"
    assert str(recent.thread_id) not in selected()


def test_deleted_threads_are_never_candidates(population):
    Conversation.objects.filter(pk=population["c"].pk).update(status=Conversation.Status.DELETED)
    assert str(population["c"].thread_id) not in selected(*EVERY_THREAD)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("45s", timedelta(seconds=45)),
        ("30m", timedelta(minutes=30)),
        ("2h", timedelta(hours=2)),
        (" 2H ", timedelta(hours=2)),
        ("7d", timedelta(days=7)),
        ("1w", timedelta(weeks=1)),
    ],
)
def test_durations_parse(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--idle-for", "2 hours"), "Bad duration"),
        (("--idle-for", "h"), "Bad duration"),
        (("--limit", "0"), "--limit"),
        (("--min-pressure", "-1"), "--min-pressure"),
        (("--agent", "nope"), "No agent"),
        (("--owner", "nobody"), "No user"),
        (("--queue", "q"), "--queue"),
    ],
)
def test_bad_arguments_are_clear_errors(args, message, db):
    with pytest.raises(CommandError, match=message):
        call_command("compact_threads", *args, stdout=StringIO())


def test_async_without_a_broker_is_a_clear_error(make_thread, settings):
    make_thread("t")
    settings.CELERY_BROKER_URL = "memory://"
    with pytest.raises(CommandError, match="Celery broker"):
        call_command("compact_threads", "--async", stdout=StringIO())


# --- the synchronous run ------------------------------------------------------------------------------


def test_each_compressed_thread_gets_a_bulk_record_and_fresh_pressure(make_thread, summarizer):
    model = summarizer()
    threads = [make_thread(f"t{i}", pressure=0.9 + i / 100) for i in range(3)]

    report = compact()

    assert report["compressed"] == 3
    assert len(model.summary_prompts) == 3
    for thread in threads:
        record = bulk_records(thread).get()
        assert (record.status, record.level, record.requested_by) == ("completed", "summary", None)
        assert record.file_path.startswith("outputs/conversation_history/")
        assert record.summary_usage["total_tokens"] == 120
        values = snapshot(thread)
        assert values["_summarization_event"]["cutoff_index"] == record.cutoff_index > 0
        thread.refresh_from_db()
        assert thread.summary_active is True
        assert thread.pressure_ratio < 0.9  # the meter falls, from the refreshed token_usage
    assert [t["outcome"] for t in report["threads"]] == ["completed"] * 3


def test_summary_line_counts_every_outcome(make_thread, summarizer):
    # Pressure fixes the order: a and e summarize fine, b's summary fails, c is too short, d is busy.
    summarizer(SUMMARY, RuntimeError("model exploded"), SUMMARY)
    a = make_thread("a", pressure=0.99)
    b = make_thread("b", pressure=0.95)
    c = make_thread("c", pressure=0.90, turns=1)
    d = make_thread("d", pressure=0.85)
    AgentRun.objects.create(conversation=d, status=AgentRun.Status.QUEUED)
    e = make_thread("e", pressure=0.80)
    b_before = snapshot(b)

    text = compact_text(*EVERY_THREAD)

    saved = sum(r.tokens_saved for r in CompressionRecord.objects.filter(status="completed"))
    assert saved > 0
    assert (
        f"Compressed 2, no-op 1, skipped busy 1, skipped (no capability) 0, failed 1; {saved:,} tokens saved; "
        "2 summary call(s), 240 summary tokens."
    ) in text
    assert [bulk_records(t).get().status for t in (a, c, e)] == ["completed", "no_op", "completed"]
    failure = bulk_records(b).get()
    assert failure.status == "failed" and "model exploded" in failure.error_detail
    assert without_ledger(snapshot(b)) == without_ledger(b_before)  # the failed call is billed
    assert not bulk_records(d).exists()


def test_json_report_has_the_counts_and_each_thread(make_thread, summarizer):
    summarizer(SUMMARY, RuntimeError("model exploded"), SUMMARY)
    threads = [make_thread("a", pressure=0.99), make_thread("b", pressure=0.95)]
    make_thread("c", pressure=0.9, turns=1)

    report = compact("--limit", "3")

    saved = sum(r.tokens_saved for r in CompressionRecord.objects.filter(status="completed"))
    assert {k: v for k, v in report.items() if k not in ("errors", "threads")} == {
        "skipped_small_saving": 0,
        "compressed": 1,
        "no_op": 1,
        "skipped_busy": 0,
        "skipped_capability": 0,
        "failed": 1,
        "tokens_saved": saved,
        "summary_calls": 1,
        "summary_tokens": 120,
        "interrupted": False,
        "not_started": 0,
    }
    assert len(report["errors"]) == 1 and "model exploded" in report["errors"][0]
    rows = [{k: row[k] for k in ("thread", "title", "outcome")} for row in report["threads"][:2]]
    assert rows == [
        {"thread": str(threads[0].thread_id), "title": "a", "outcome": "completed"},
        {"thread": str(threads[1].thread_id), "title": "b", "outcome": "failed"},
    ]
    # Each row's saving adds up to the report's.
    assert sum(row["tokens_saved"] for row in report["threads"]) == report["tokens_saved"]


@pytest.mark.parametrize(
    "status", [AgentRun.Status.RUNNING, AgentRun.Status.QUEUED, AgentRun.Status.INTERRUPTED]
)
def test_busy_threads_are_skipped_and_reported(make_thread, summarizer, status):
    model = summarizer()
    idle = make_thread("idle", pressure=0.99)
    busy = make_thread("busy", pressure=0.95)
    AgentRun.objects.create(conversation=busy, status=status)
    before = snapshot(busy)

    report = compact()

    assert (report["compressed"], report["skipped_busy"]) == (1, 1)
    assert {t["thread"]: t["outcome"] for t in report["threads"]} == {
        str(idle.thread_id): "completed",
        str(busy.thread_id): "skipped_busy",
    }
    assert len(model.summary_prompts) == 1
    assert snapshot(busy) == before
    assert not CompressionRecord.objects.filter(conversation=busy).exists()


def test_an_agent_without_the_capability_is_skipped(make_thread, summarizer, agent):
    summarizer()
    make_thread("t")
    agent.capabilities = []
    agent.save()
    report = compact()
    assert (report["skipped_capability"], report["failed"]) == (1, 0)
    assert not CompressionRecord.objects.exists()


# --- Ctrl-C -----------------------------------------------------------------------------------------


def _interrupting(monkeypatch, *, at_call: int, times: int = 1) -> ScriptedChatModel:
    """A summarizer that sends SIGINT to this process ``times`` times during summary call ``at_call``."""
    model = ScriptedChatModel(summaries=[SUMMARY], summary_usage=USAGE)
    original = model._generate

    def generate(messages, stop=None, run_manager=None, **kwargs):
        result = original(messages, stop=stop, run_manager=run_manager, **kwargs)
        if len(model.summary_prompts) == at_call:
            for _ in range(times):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler runs in this (main) thread at the next bytecode
        return result

    object.__setattr__(model, "_generate", generate)
    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
    return model


def test_ctrl_c_stops_between_threads_leaving_each_compressed_or_untouched(make_thread, monkeypatch):
    assert threading.current_thread() is threading.main_thread()
    model = _interrupting(monkeypatch, at_call=2)
    threads = [make_thread(f"t{i}", pressure=0.99 - i / 100) for i in range(5)]
    before = {t.pk: snapshot(t) for t in threads}
    handler = signal.getsignal(signal.SIGINT)

    report = compact()

    assert (report["interrupted"], report["compressed"], report["not_started"]) == (True, 2, 3)
    assert len(model.summary_prompts) == 2
    for thread in threads[:2]:  # thread 2 was interrupted mid-summary and still completed whole
        assert bulk_records(thread).get().status == "completed"
        assert snapshot(thread)["_summarization_event"]["cutoff_index"] > 0
    for thread in threads[2:]:
        assert not CompressionRecord.objects.filter(conversation=thread).exists()
        assert snapshot(thread) == before[thread.pk]
        assert workdir_files(thread) == []
    assert signal.getsignal(signal.SIGINT) is handler  # restored


def test_ctrl_c_summary_line_says_interrupted(make_thread, monkeypatch):
    _interrupting(monkeypatch, at_call=1)
    make_thread("a", pressure=0.99)
    make_thread("b", pressure=0.98)
    assert "Interrupted: stopped between threads, 1 not started." in compact_text()


def test_second_ctrl_c_abandons_the_current_thread_which_rolls_back(make_thread, monkeypatch):
    model = _interrupting(monkeypatch, at_call=2, times=2)
    threads = [make_thread(f"t{i}", pressure=0.99 - i / 100) for i in range(3)]
    before = {t.pk: snapshot(t) for t in threads}

    report = compact()

    assert (report["interrupted"], report["compressed"], report["not_started"]) == (True, 1, 2)
    assert len(model.summary_prompts) == 2
    assert bulk_records(threads[0]).get().status == "completed"
    for thread in threads[1:]:
        assert not CompressionRecord.objects.filter(conversation=thread).exists()
        assert snapshot(thread) == before[thread.pk]


def test_the_dry_run_predicts_the_run_and_no_thread_grows(make_thread, summarizer):
    summarizer()
    hot = [make_thread(f"hot {i}", pressure=0.9 + i / 100) for i in range(2)]
    short = make_thread("short", pressure=0.95, turns=1)  # too short to fold anything
    cold = make_thread("cold", pressure=0.3)  # under the hint: not a default candidate
    recent = make_thread("recent", pressure=0.97, idle=timedelta(minutes=1))  # in use right now

    plan = {row["thread"]: row for row in compact("--dry-run")["candidates"]}
    assert set(plan) == {str(t.thread_id) for t in (*hot, short)}
    assert plan[str(short.thread_id)]["would"].startswith("no change")
    text = compact_text()

    threads = CompressionRecord.objects.filter(trigger="bulk")
    assert {r.conversation_id for r in threads} == {t.pk for t in (*hot, short)}
    assert not CompressionRecord.objects.filter(conversation__in=[cold, recent]).exists()
    for record in threads:
        predicted = plan[str(record.conversation.thread_id)]
        assert (record.status == "completed") == (predicted["would"] == "compress")
        assert record.after_tokens <= record.before_tokens  # no thread grows
        if record.status == "completed":
            assert record.after_tokens <= predicted["expected_after"] * 1.5
    # One line per thread (its id, owner, title and size before → after), and the total is their sum.
    assert all(f'#{t.pk} {t.owner.username} "{t.title}": ' in text for t in (*hot, short)) and "→" in text
    saved = sum(r.tokens_saved for r in threads)
    assert f"{saved:,} tokens saved" in text


def test_a_bulk_summary_carries_the_reference_index_like_the_other_paths(make_thread, summarizer):
    summarizer()  # a summary that keeps none of the folded URLs
    thread = make_thread("indexed", pressure=0.95)

    assert compact()["compressed"] == 1

    event = snapshot(thread)["_summarization_event"]
    entries = event["reference_index"]["entries"]
    assert entries and event["summary_message"].content.endswith("</reference_index>")
    assert bulk_records(thread).get().loss_report["indexed"] == len(entries)
