"""`compact_threads` for an operator (issue 39, item 8): a thread whose expected saving would not pay for
its summary is left alone (``BULK_MIN_SAVING_FACTOR``, default 2 × the summary's length), each thread
is named by its id and owner (titles repeat), and a failure is told in words, never as an exception's
class."""

from __future__ import annotations

import re

import pytest

from compression.models import CompressionRecord
from tests.compression._threads import bulk_records, compact, compact_text, connection_error
from tests.context_engine.chats import SUMMARY

pytestmark = pytest.mark.django_db
EVERY_THREAD = ("--min-pressure", "any", "--idle-for", "any")
CLASS_NAME = re.compile(r"\b\w*(Error|Exception)\b")


def test_a_saving_under_the_floor_is_planned_and_run_as_a_skip(make_thread, summarizer, settings):
    model = summarizer(SUMMARY, SUMMARY)
    thread = make_thread("small gain", pressure=0.97)
    [planned] = compact("--dry-run", *EVERY_THREAD)["candidates"]
    assert planned["would"] == "compress"  # at the default floor (2 × the summary) it pays

    settings.BULK_MIN_SAVING_FACTOR = 1_000  # no saving is a thousand summaries' worth
    [planned] = compact("--dry-run", *EVERY_THREAD)["candidates"]
    assert planned["would"].startswith("skip: small saving: would save ")
    assert "under 1000 × the " in planned["would"]

    text = compact_text(*EVERY_THREAD)
    assert not CompressionRecord.objects.exists() and model.summary_prompts == []
    line = next(line for line in text.splitlines() if line.startswith(f"#{thread.pk} "))
    assert line.startswith(
        f'#{thread.pk} {thread.owner.username} "small gain": skipped_small_saving: would save '
    )
    assert (
        "Compressed 0," in text
        and "Skipped 1 thread(s) whose expected saving is under 1000 × its summary" in text
    )
    report = compact(*EVERY_THREAD)
    assert report["skipped_small_saving"] == 1 and report["compressed"] == 0
    assert report["threads"][0]["outcome"] == "skipped_small_saving"

    settings.BULK_MIN_SAVING_FACTOR = 0  # every thread that would get smaller
    report = compact(*EVERY_THREAD)
    assert (report["compressed"], report["skipped_small_saving"]) == (1, 0)
    assert bulk_records(thread).get().status == "completed"


def test_threads_with_one_title_are_told_apart_by_id_and_owner(make_thread, summarizer, other_user):
    summarizer(SUMMARY, SUMMARY)
    mine = make_thread("Plans", pressure=0.99)
    theirs = make_thread("Plans", pressure=0.98, owner=other_user)

    text = compact_text(*EVERY_THREAD)
    dry = compact_text("--dry-run", *EVERY_THREAD)

    for thread in (mine, theirs):
        assert f'#{thread.pk} {thread.owner.username} "Plans": completed (' in text
        assert re.search(rf"^{thread.pk}\s+{thread.owner.username}\s+Plans\s", dry, re.M), dry
    assert mine.owner.username != theirs.owner.username


def test_a_failure_is_told_in_words_not_an_exception_class(make_thread, summarizer):
    summarizer(
        connection_error(), RuntimeError("model exploded"), connection_error(), RuntimeError("model exploded")
    )
    unreachable = make_thread("unreachable", pressure=0.99)
    exploded = make_thread("exploded", pressure=0.98)

    text = compact_text(*EVERY_THREAD)
    report = compact(*EVERY_THREAD)  # nothing left to try: both failed and stayed as they were

    lines = {
        t: next(line for line in text.splitlines() if line.startswith(f"#{t.pk} "))
        for t in (unreachable, exploded)
    }
    assert "Connection error" in lines[unreachable]
    assert ": failed" in lines[unreachable] and "could not be produced" in lines[unreachable]
    assert "model exploded" in lines[exploded]
    for line in lines.values():
        assert not CLASS_NAME.search(line), line
    assert not any(CLASS_NAME.search(error) for error in report["errors"])
    # The admin's record keeps the exception as raised.
    assert all("RuntimeError" in record.error_detail for record in bulk_records(exploded))
