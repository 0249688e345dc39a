"""Issue 38: a tool the model steers cannot hurt the server. ``search_history`` patterns run on RE2 in
bounded memory with nothing cached (the regex bomb and the cache exhaustion end as tool errors within
2 s, the process's memory growing under 100 MB); every tool call has a whole-call budget (wall time,
answer size) applied by ``ToolBudgetMiddleware``, which a slow per-line tool sees mid-loop."""

from __future__ import annotations

import os
import resource
import threading
import time
import uuid

import pytest
from langchain_core.messages import ToolMessage

from agent_platform.runtime.stopping import ToolBudgetMiddleware, ToolStopped
from agent_platform.tools import history_search
from agent_platform.tools.call_budget import CallBudget, CallOverBudget, budget_set, output_bounded
from agent_platform.tools.history_search import build_search_history_tool
from agent_platform.workdir import Workdir
from context_engine.state import STOP_CHECK_CONFIG_KEY

HISTORY = "outputs/conversation_history/session_t1.md"
MB = 1024 * 1024
BOMB = "a{2147483647}"
CACHE_FILLERS = [f"a{{{n}}}" for n in range(1_000_000, 1_000_006)]


def rss_bytes() -> int:
    """The process's resident memory now (Linux: /proc/self/statm)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@pytest.fixture
def workdir(workdir_storage):
    workdir = Workdir(uuid.uuid4())
    workdir.write_text(HISTORY, "".join(f"line {n}: aaaa ABC-{n}\n" for n in range(1, 2001)))
    return workdir


@pytest.fixture
def search(workdir):
    return build_search_history_tool(workdir)


def test_the_regex_bomb_and_the_cache_fillers_are_tool_errors_within_2_s_and_100_mb(search):
    before, peak_before = rss_bytes(), peak_rss_bytes()
    started = time.monotonic()
    answers = [search.invoke({"pattern": p, "regex": True}) for p in [BOMB, *CACHE_FILLERS]]
    took = time.monotonic() - started
    grown, peak_grown = rss_bytes() - before, peak_rss_bytes() - peak_before
    for pattern, answer in zip([BOMB, *CACHE_FILLERS], answers, strict=True):
        assert answer.startswith("Error: not a valid regular expression in RE2 syntax"), (pattern, answer)
        assert "repeat count over 1000" in answer
    assert took < 2.0, f"{took:.2f} s"
    assert grown < 100 * MB and peak_grown < 100 * MB, (grown / MB, peak_grown / MB)


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("(?V1)[a]", "invalid perl operator"),
        ("(?P<x>a)(?P=x)", "invalid"),  # a backreference
        ("a(?=b)", "invalid perl operator"),  # lookahead
        ("(unclosed", "missing )"),
        ("((a{1000}){1000}){1000}", "invalid repetition size"),
        ("\ud800", "not valid Unicode"),
    ],
)
def test_patterns_re2_refuses_answer_a_tool_error_the_model_reads(search, pattern, words):
    answer = search.invoke({"pattern": pattern, "regex": True})
    assert answer.startswith("Error: ") and words in answer, answer


def test_re2_syntax_is_said_in_the_tool_description_and_it_matches_as_before(search):
    assert "RE2 syntax" in search.args["regex"]["description"]
    assert search.invoke({"pattern": r"ABC-1\d\d\b", "regex": True}).startswith(f"{HISTORY}:L100: ")
    assert search.invoke({"pattern": r"abc-7$", "regex": True, "ignore_case": True}).startswith(
        f"{HISTORY}:L7: "
    )
    assert search.invoke({"pattern": "a{2}", "regex": False}).startswith("No match")  # literal text
    assert search.invoke({"pattern": r"[{]\{3\}|a{4}", "regex": True}).startswith(f"{HISTORY}:L1: ")


def test_compiled_patterns_are_not_kept_between_searches(search):
    import re2

    re2.purge()
    for n in range(40):  # any distinct pattern would stay in the cache: none may
        search.invoke({"pattern": f"ABC-{n}x?", "regex": True})
    assert re2._Regexp._make.cache_info().currsize == 0  # the module's LRU cache is never filled


def test_a_slow_per_line_search_sees_its_deadline_mid_file(search, monkeypatch):
    lines_read = []
    real_split = history_search.split_lines

    def slow_lines(text):
        for line in real_split(text):
            lines_read.append(line)
            time.sleep(0.01)
            yield line

    monkeypatch.setattr(history_search, "split_lines", slow_lines)
    started = time.monotonic()
    with budget_set(CallBudget(seconds=0.3)), pytest.raises(CallOverBudget):
        search.invoke({"pattern": "never there"})
    assert time.monotonic() - started < 0.5
    assert 5 < len(lines_read) < 2000  # ended mid-file, not at its end


class _Runtime:
    def __init__(self, stop_check=None) -> None:
        self.config = {"configurable": {STOP_CHECK_CONFIG_KEY: stop_check} if stop_check else {}}


class _Request:
    def __init__(self, name: str, stop_check=None) -> None:
        self.tool_call = {"name": name, "id": "call-1", "args": {}}
        self.runtime = _Runtime(stop_check)


def _slow_tool(finished: threading.Event, *, seconds: float = 30.0):
    """A handler that works in steps, checking its budget between them, for up to ``seconds``."""
    from agent_platform.tools.call_budget import budget_check

    def handler(request):
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                budget_check()
                time.sleep(0.01)
            return ToolMessage("done", tool_call_id="call-1")
        finally:
            finished.set()

    return handler


def test_the_whole_call_budget_answers_a_tool_error_and_ends_the_tool(settings):
    settings.TOOL_CALL_SECONDS = 0.5
    finished = threading.Event()
    started = time.monotonic()
    answer = ToolBudgetMiddleware().wrap_tool_call(_Request("search_history"), _slow_tool(finished))
    assert time.monotonic() - started < 1.0
    assert isinstance(answer, ToolMessage) and answer.status == "error"
    assert answer.content.startswith("Error: the tool call ran past its time budget of 0.5 s")
    assert finished.wait(0.5)  # the abandoned tool saw it at its next check


def test_stop_reaches_any_tool_within_half_a_second_and_the_tool_ends(settings):
    settings.TOOL_CALL_SECONDS = 60
    finished, stop = threading.Event(), threading.Event()
    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    with pytest.raises(ToolStopped):
        ToolBudgetMiddleware().wrap_tool_call(_Request("read_file", stop.is_set), _slow_tool(finished))
    assert time.monotonic() - started < 0.3 + 0.5
    assert finished.wait(0.5)


def test_an_answer_past_the_output_budget_is_cut_with_a_note(settings):
    settings.TOOL_OUTPUT_MAX_CHARS = 1000
    answer = ToolBudgetMiddleware().wrap_tool_call(
        _Request("ls"), lambda request: ToolMessage("x" * 5000, tool_call_id="call-1")
    )
    assert len(answer.content) == 1000 and "[output cut: the tool answered 5000 characters" in answer.content
    assert output_bounded("short", max_chars=1000) == "short"
