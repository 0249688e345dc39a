"""Issue 38 item 6: every agent tool under generated arguments (patterns, paths, ``path:L<n>`` pointers,
sizes, any Unicode, lone surrogates and NULs included), called through the budget every call goes
through (``ToolBudgetMiddleware``): each call answers a result or a tool error, never an exception
(which would fail the turn), within its budget, and the process's memory stays within a bound.

Not generated here: ``ask_user`` (its one argument is a question the run stops on, answered by the
user) and ``task`` (a sub-agent's model loop, whose own tool calls are these)."""

from __future__ import annotations

import os
import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import ToolMessage
from pydantic import ValidationError

from agent_platform.runtime.stopping import ToolBudgetMiddleware
from agent_platform.tools.files import build_file_tools
from agent_platform.tools.history_search import build_search_history_tool
from agent_platform.tools.knowledge import build_query_kb_tool
from agent_platform.tools.web_search import build_web_search_tool
from agent_platform.workdir import Workdir

BUDGET_SECONDS = 2.0
SLACK_SECONDS = 1.0  # the watcher's poll, a thread's start, a loaded machine
MEMORY_GROWTH_MAX = 150 * 1024 * 1024
HISTORY = "outputs/conversation_history/session_1.md"
SAVED = "outputs/large_tool_results/web_search-0123456789abcdef.txt"
UPLOAD = "uploads/notes.md"
KNOWN = [HISTORY, SAVED, UPLOAD]

ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=80)  # surrogates and controls too
PATHS = st.one_of(
    ANY_TEXT,
    st.sampled_from(
        KNOWN + ["..", "../x", "/etc/passwd", "outputs/", ".", "", "a\x00b", "~/x", "uploads/../.."]
    ),
    st.builds(
        lambda p, n: f"{p}:L{n}", st.sampled_from([*KNOWN, "missing.md", ""]), st.integers(-(10**30), 10**30)
    ),
    st.builds(lambda p, s: f"{p}:L{s}", st.sampled_from(KNOWN), ANY_TEXT),
)
SIZES = st.one_of(st.integers(-(2**64), 2**64), st.sampled_from([0, 1, -1, 200, 201, 10**6]))
PATTERNS = st.one_of(
    ANY_TEXT,
    st.sampled_from(
        [
            "a{2147483647}",
            "(?V1)[a]",
            "a{1000}{1000}",
            "(a*)*b",
            "(a|a)*$",
            "\\",
            "[",
            "(?<=a)b",
            "\\p{Han}+",
            "ABC-\\d+",
        ]
    ),
    st.builds(lambda n: f"a{{{n}}}", st.integers(0, 10**12)),
)


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _Runtime:
    config: dict = {"configurable": {}}


class _Request:
    def __init__(self, name: str, args: dict) -> None:
        self.tool_call = {"name": name, "id": "call-fuzz", "args": args}
        self.runtime = _Runtime()


class EchoProvider:
    """A search provider that answers with what it was asked (and a large page of it)."""

    def search(self, query: str, *, max_results: int) -> list[dict]:
        return [{"title": query, "url": "https://example.org", "content": query * 50, "score": 1.0}]


def _called(tool, args: dict) -> ToolMessage | None:
    """``tool`` called with ``args`` through the budget; None when the arguments are refused before the
    tool runs (the tool node answers those as a tool error itself)."""

    def handler(request):
        return tool.invoke({"type": "tool_call", "name": tool.name, "args": args, "id": "call-fuzz"})

    try:
        return ToolBudgetMiddleware().wrap_tool_call(_Request(tool.name, args), handler)
    except ValidationError:
        return None


def _assert_bounded(tool, args: dict, baseline: int) -> None:
    started = time.monotonic()
    answer = _called(tool, args)
    took = time.monotonic() - started
    assert took < BUDGET_SECONDS + SLACK_SECONDS, (tool.name, args, took)
    if answer is not None:
        assert isinstance(answer, ToolMessage) and isinstance(answer.content, str), (tool.name, args)
        assert len(answer.content) <= 1_000_000
    assert rss_bytes() - baseline < MEMORY_GROWTH_MAX, (tool.name, args, (rss_bytes() - baseline) >> 20)


@pytest.fixture
def baseline() -> int:
    """The process's memory before a test's first example (a worker's earlier tests left it where it
    is): each test's growth is measured from here."""
    return rss_bytes()


@pytest.fixture
def tools(settings, tmp_path, baseline):
    settings.WORKDIR_STORAGE, settings.WORKDIR_ROOT = "local", tmp_path / "workdirs"
    settings.TOOL_CALL_SECONDS = BUDGET_SECONDS
    workdir = Workdir(uuid.uuid4())
    workdir.write_text(HISTORY, "".join(f"line {n}: ABC-{n} 你好 aaaa\n" for n in range(1, 3001)))
    workdir.write_text(SAVED, "x" * 50_000 + " ABC-999\n")
    workdir.write_text(UPLOAD, "notes\n" * 100)
    built = build_file_tools(workdir)
    built["search_history"] = build_search_history_tool(workdir)
    built["web_search"] = build_web_search_tool(EchoProvider())
    return built


FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(pattern=PATTERNS, regex=st.booleans(), ignore_case=st.booleans(), offset=SIZES, limit=SIZES)
def test_search_history_under_generated_arguments(
    tools, baseline, pattern, regex, ignore_case, offset, limit
):
    args = {"pattern": pattern, "regex": regex, "ignore_case": ignore_case, "offset": offset, "limit": limit}
    _assert_bounded(tools["search_history"], args, baseline)


@FUZZ
@given(path=PATHS, offset=SIZES, limit=SIZES)
def test_read_file_and_ls_under_generated_arguments(tools, baseline, path, offset, limit):
    _assert_bounded(tools["read_file"], {"path": path, "offset": offset, "limit": limit}, baseline)
    _assert_bounded(tools["ls"], {"path": path}, baseline)


@FUZZ
@given(path=PATHS, content=ANY_TEXT, old=ANY_TEXT, new=ANY_TEXT, replace_all=st.booleans())
def test_write_file_and_edit_file_under_generated_arguments(
    tools, baseline, path, content, old, new, replace_all
):
    _assert_bounded(tools["write_file"], {"path": path, "content": content}, baseline)
    args = {"path": path, "old_string": old, "new_string": new, "replace_all": replace_all}
    _assert_bounded(tools["edit_file"], args, baseline)


@FUZZ
@given(query=ANY_TEXT)
def test_web_search_under_generated_arguments(tools, baseline, query):
    _assert_bounded(tools["web_search"], {"query": query}, baseline)


@pytest.mark.django_db(transaction=True)  # the call runs on a thread of its own, with its own connection
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=ANY_TEXT, kb=st.one_of(st.none(), ANY_TEXT, st.sampled_from(["9" * 5000, str(2**63), "0", "²"])))
def test_query_kb_under_generated_arguments(settings, baseline, query, kb):
    settings.TOOL_CALL_SECONDS = BUDGET_SECONDS
    _assert_bounded(build_query_kb_tool(), {"query": query, "kb": kb}, baseline)
