"""``search_history`` and ``read_file`` pointers (issue 25), on local disk and on the loopback S3 bucket:
after a real summary (the offline model, through ``summarize_span`` into the thread's workdir), every
pointer of the reference index opens, in one ``read_file`` call, on a line that holds its identifier,
and ``search_history`` finds it at that line."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent_platform.runtime.offline import OfflineChatModel
from agent_platform.tools.files import build_file_tools
from agent_platform.tools.history_search import HIT_MAX_CHARS, SEARCH_MAX_LIMIT, build_search_history_tool
from agent_platform.workdir import Workdir
from context_engine.config import CompressionConfig
from context_engine.lines import pointer
from context_engine.steps import run_sync
from context_engine.summary.call import Span, summarize_span
from context_engine.tokens.messages import DEFAULT_PROFILE

HISTORY = "outputs/conversation_history/session_t1.md"
SAVED = "outputs/large_tool_results/web_search-0123456789abcdef.txt"


@pytest.fixture
def workdir(workdir_storage):
    return Workdir(uuid.uuid4())


@pytest.fixture
def search(workdir):
    return build_search_history_tool(workdir)


@pytest.fixture
def read_file(workdir):
    return build_file_tools(workdir)["read_file"]


def _fold(base: int = 0) -> list:
    out = []
    for i in range(base, base + 12):
        out.append(
            HumanMessage(f"Look at ticket OPS-{4100 + i} and src/service_{i}/worker.py please.", id=f"h{i}")
        )
        out.append(
            AIMessage(
                "", id=f"a{i}", tool_calls=[{"name": "web_search", "args": {"query": f"q{i}"}, "id": f"c{i}"}]
            )
        )
        out.append(
            ToolMessage(
                f"found https://status.example.com/incidents/{i}?ref=a&x={i} with {i + 3} MB",
                tool_call_id=f"c{i}",
                id=f"t{i}",
            )
        )
    return out


def _summarize(workdir, folded):
    return run_sync(
        summarize_span(
            Span(
                folded,
                state={"_summarization_session_id": "session_t1"},
                previous=None,
                local_cutoff=len(folded),
                budget=20_000,
                now=datetime(2026, 12, 1, tzinfo=UTC),
            ),
            config=CompressionConfig(trigger_tokens=6000),
            store=workdir,
            profile=DEFAULT_PROFILE,
        ),
        handler=lambda request: None,
        summary_model=OfflineChatModel(),
    )


def test_every_index_pointer_opens_on_its_identifier_in_one_read_and_search_finds_it(
    workdir, search, read_file
):
    workdir.write_text(HISTORY, "earlier section\nwith two lines\n")  # pointers count from the file's start
    first = _summarize(workdir, _fold())
    second = _summarize(workdir, _fold(base=100))
    assert first.index.entries, first.event["summary_message"].content
    for entry in first.index.entries:  # still true after a second section was appended
        opened = read_file.invoke({"path": pointer(HISTORY, entry.line), "limit": 1})
        number, text = opened.split("\n")[0].split("\t", 1)
        assert int(number) == entry.line and entry.value in text
        hits = search.invoke({"pattern": entry.value, "limit": SEARCH_MAX_LIMIT})
        assert f"{pointer(HISTORY, entry.line)}: " in hits
    assert second.index.entries and min(e.line for e in second.index.entries) > max(
        e.line for e in first.index.entries
    )


def test_search_history_answers_pointers_bounded_and_paged(workdir, search):
    workdir.write_text(HISTORY, "".join(f"line {n} mentions ABC-{n}\n" for n in range(1, 121)))
    workdir.write_text(SAVED, "x" * 1000 + " ABC-999 " + "y" * 1000 + "\n")
    page = search.invoke({"pattern": "ABC-", "limit": 50})
    rows = page.split("\n")
    assert rows[0] == f"{HISTORY}:L1: line 1 mentions ABC-1"
    assert rows[-1] == "(hits 1-50 of 121; call search_history with offset=50 for more)"
    last = search.invoke({"pattern": "ABC-", "offset": 120}).split("\n")
    assert last[0].startswith(f"{SAVED}:L1: …") and "ABC-999" in last[0]
    assert len(last[0]) <= len(f"{SAVED}:L1: ") + HIT_MAX_CHARS + 2 and last[-1] == "(hits 121-121 of 121)"
    assert search.invoke({"pattern": "abc-7", "ignore_case": True}).startswith(f"{HISTORY}:L7: ")
    assert search.invoke({"pattern": r"ABC-1\d\d\b", "regex": True}).split("\n")[0] == (
        f"{HISTORY}:L100: line 100 mentions ABC-100"
    )
    assert search.invoke({"pattern": "ABC-1\\d", "limit": 1}).startswith("No match")  # literal by default


def test_bad_input_is_a_clear_tool_error(search, workdir):
    workdir.write_text(HISTORY, "text\n")
    assert search.invoke({"pattern": "(unclosed", "regex": True}).startswith(
        "Error: not a valid regular expression in RE2 syntax"
    )
    assert search.invoke({"pattern": ""}) == "Error: give a pattern to search for."
    assert search.invoke({"pattern": "x", "limit": 0}).startswith("Error: offset must be 0 or more")
    assert search.invoke({"pattern": "text", "offset": 5}) == "Error: offset 5 is past the last hit (1 hits)."


def test_nothing_to_search_yet_is_an_answer_not_an_error(search):
    assert search.invoke({"pattern": "anything"}) == (
        "No match for 'anything' in outputs/conversation_history, outputs/large_tool_results, uploads."
    )


def test_read_file_pointer_and_offset_agree(workdir, read_file):
    workdir.write_text("notes/a.md", "one\ntwo\r\nthree\u2028still three\nfour\n")
    assert read_file.invoke({"path": "notes/a.md:L3", "limit": 1}) == (
        "     3\tthree\u2028still three\n(showing lines 3-3 of 4; call read_file with offset=3 to read more)"
    )
    assert read_file.invoke({"path": "notes/a.md", "offset": 2, "limit": 1}) == read_file.invoke(
        {"path": "notes/a.md:L3", "limit": 1}
    )
    assert read_file.invoke({"path": "notes/a.md:L9"}).startswith("Error: offset 8 is past the end")
