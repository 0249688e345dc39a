"""The offline model: honest replies, rule routing to bound tools only, answers from tool results,
extractive summaries under the five headings, streaming with tool-call chunks and usage."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from agent_platform.runtime.offline import SUMMARY_HEADINGS, OfflineChatModel
from compression.engine.history import format_summary_prompt


@tool
def query_kb(query: str, kb: str | None = None) -> str:
    """Search the knowledge bases."""
    return ""


@tool
def web_search(query: str) -> str:
    """Search the web."""
    return ""


@tool
def read_file(path: str, offset: int = 0, limit: int = 200) -> str:
    """Read a file."""
    return ""


@tool
def ask_user(question: str) -> str:
    """Ask the user."""
    return ""


ALL = [query_kb, web_search, read_file, ask_user]


@pytest.mark.parametrize(
    ("text", "tool_name"),
    [
        ("please search the docs for pricing", "query_kb"),
        ("在知识库里查找退款政策", "query_kb"),
        ("what is in the news on the web today", "web_search"),
        ("read outputs/large_tool_results/query_kb-0123.txt", "read_file"),
        ("ask me which color I like", "ask_user"),
    ],
)
def test_requests_are_routed_to_the_matching_bound_tool(text, tool_name):
    reply = OfflineChatModel().bind_tools(ALL).invoke([HumanMessage(text)])
    assert [call["name"] for call in reply.tool_calls] == [tool_name]


def test_read_file_gets_the_path_verbatim():
    reply = OfflineChatModel().bind_tools(ALL).invoke("read outputs/notes.md please")
    assert reply.tool_calls[0]["args"] == {"path": "outputs/notes.md"}


def test_a_tool_that_is_not_bound_is_never_called():
    reply = OfflineChatModel().bind_tools([web_search]).invoke("search the docs for pricing")
    assert reply.tool_calls == []
    assert "Offline model" in reply.content


def test_plain_reply_says_it_is_offline():
    reply = OfflineChatModel().invoke("hello")
    assert "Offline model" in reply.content and "hello" in reply.content
    assert reply.usage_metadata["total_tokens"] > 0


def test_the_answer_quotes_titles_ids_and_snippets_of_tool_results():
    payload = {
        "query": "pricing",
        "results": [{"id": "chunk-7", "title": "Price list", "content": "Pro costs 9 EUR"}],
    }
    messages = [
        HumanMessage("search pricing"),
        AIMessage("", tool_calls=[{"name": "query_kb", "args": {"query": "pricing"}, "id": "c1"}]),
        ToolMessage(json.dumps(payload), tool_call_id="c1", name="query_kb"),
    ]
    reply = OfflineChatModel().bind_tools(ALL).invoke(messages)
    assert reply.tool_calls == []
    assert "Price list" in reply.content and "chunk-7" in reply.content and "Pro costs 9 EUR" in reply.content


def test_summary_has_exactly_the_five_headings_and_keeps_references_verbatim():
    messages = [
        HumanMessage("Find the refund policy; I prefer short answers. See https://example.com/refunds?x=1"),
        AIMessage("", tool_calls=[{"name": "query_kb", "args": {"query": "refund"}, "id": "c1"}]),
        ToolMessage(
            '{"results": [{"id": "chunk-42", "kb_id": "kb_main"}]}', tool_call_id="c1", name="query_kb"
        ),
        AIMessage("Saved to outputs/large_tool_results/query_kb-0123456789abcdef.txt"),
    ]
    summary = OfflineChatModel().invoke(format_summary_prompt(messages)).content
    assert [line for line in summary.splitlines() if line.startswith("## ")] == list(SUMMARY_HEADINGS)
    for reference in (
        "https://example.com/refunds?x=1",
        "outputs/large_tool_results/query_kb-0123456789abcdef.txt",
        "chunk-42",
        "kb_main",
    ):
        assert reference in summary
    assert "I prefer short answers" in summary


def test_streaming_yields_words_and_tool_call_chunks_with_usage():
    model = OfflineChatModel().bind_tools(ALL)
    chunks = list(model.stream("please search the docs for pricing"))
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert merged.tool_calls[0]["name"] == "query_kb"
    assert merged.usage_metadata["total_tokens"] > 0

    words = [c.content for c in OfflineChatModel().stream("hello world") if c.content]
    assert len(words) > 3 and "".join(words) == OfflineChatModel().invoke("hello world").content


def test_routing_is_deterministic():
    model = OfflineChatModel().bind_tools(ALL)
    assert model.invoke("search x").tool_calls == model.invoke("search x").tool_calls
