"""The offline model: honest replies, rule routing to bound tools only, answers from tool results,
extractive summaries under the five headings, streaming with tool-call chunks and usage."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from agent_platform.runtime.offline import SUMMARY_HEADINGS, OfflineChatModel
from context_engine.summary.history import format_summary_prompt


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


def _after_tool(name: str, content: str, args: dict | None = None) -> list:
    return [
        HumanMessage("go"),
        AIMessage("", tool_calls=[{"name": name, "args": args or {}, "id": "c1"}]),
        ToolMessage(content, tool_call_id="c1", name=name),
    ]


def test_the_answer_cites_titles_sources_counts_and_the_best_snippet_in_plain_words():
    payload = {
        "query": "pricing",
        "results": [
            {"id": "chunk-7", "title": "Price list", "source": "prices.md", "content": "Pro costs 9 EUR"},
            {"id": "chunk-8", "title": "Plans", "source": "plans.md", "content": "Three plans"},
        ],
    }
    reply = OfflineChatModel().bind_tools(ALL).invoke(_after_tool("query_kb", json.dumps(payload)))
    assert reply.tool_calls == []
    text = reply.content
    assert "Offline model" in text
    assert "found 2 results" in text and "“Price list” (prices.md)" in text and "“Plans” (plans.md)" in text
    assert "Pro costs 9 EUR" in text
    assert "{" not in text and '"results"' not in text  # no raw JSON echoed


def test_a_saved_result_is_cited_by_its_path_never_pasted_as_a_receipt():
    receipt = (
        "[Tool result saved]\nTool: query_kb\nApprox tokens: 5120\nSHA-256: " + "a" * 64 + "\n"
        "Full output path: outputs/large_tool_results/query_kb-aaaaaaaaaaaaaaaa.txt\n\nOutput preview:\n"
        '{"kind":"knowledge_base","result_count":12,"query":"refunds","results":[{"title":"Refund policy",'
        '"source":"refunds.md","content_preview":"Refunds within 30 days"}],"omitted_results":11}\n'
        "[Truncated 20000 chars. Read the full output from the saved file.]"
    )
    text = OfflineChatModel().bind_tools(ALL).invoke(_after_tool("query_kb", receipt)).content
    assert "outputs/large_tool_results/query_kb-aaaaaaaaaaaaaaaa.txt" in text
    assert "about 5120 tokens" in text and "found 12 results" in text and "“Refund policy”" in text
    for raw in ("[Tool result saved]", "SHA-256", "Approx tokens", "Output preview", "[Truncated"):
        assert raw not in text


def test_file_tool_answers_name_paths_and_counts():
    model = OfflineChatModel().bind_tools(ALL)
    listing = model.invoke(_after_tool("ls", "notes/\noutputs/\nplan.md")).content
    assert "3 entries: notes/, outputs/, plan.md" in listing
    read = model.invoke(
        _after_tool("read_file", "     1\t# Plan\n     2\tDay one: Lisbon", {"path": "plan.md"})
    ).content
    assert "I read plan.md (2 lines shown)" in read and "# Plan" in read
    failed = model.invoke(_after_tool("web_search", json.dumps({"query": "x", "error": "not configured"})))
    assert "did not work: not configured" in failed.content


def test_answers_from_tools_are_deterministic():
    messages = _after_tool("ls", "a.txt\nb.txt")
    model = OfflineChatModel().bind_tools(ALL)
    assert model.invoke(messages).content == model.invoke(messages).content


def test_reported_prompt_tokens_are_the_platform_estimate_of_the_whole_request():
    from context_engine.tokens.messages import estimate_messages, profile_for_model

    model = OfflineChatModel().bind_tools(ALL)
    messages = [HumanMessage("hello there")]
    reply = model.invoke(messages)
    expected = estimate_messages(
        messages, tools=model.tool_definitions, profile=profile_for_model(model.model_name)
    )
    assert reply.usage_metadata["input_tokens"] == expected
    # the tool schemas count, as they do in a provider's prompt tokens
    assert expected > OfflineChatModel().invoke(messages).usage_metadata["input_tokens"]


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


def test_the_offline_model_speaks_the_language_it_is_given():
    reply = OfflineChatModel(language="zh-hans").bind_tools([web_search]).invoke("hello")
    assert (
        reply.content.startswith("（离线模型")
        and "“hello”" in reply.content
        and "web_search" in reply.content
    )
    assert "Offline model" not in reply.content
    assert OfflineChatModel(language="fr").invoke("hello").content.startswith("(Offline model")  # no catalog


def test_what_the_tools_returned_is_told_in_the_language_it_is_given():
    model = OfflineChatModel(language="zh-hans").bind_tools(ALL)
    listing = model.invoke(_after_tool("ls", "notes/\noutputs/\nplan.md")).content
    assert "工作目录列出 3 项：notes/, outputs/, plan.md。" in listing
    read = model.invoke(
        _after_tool("read_file", "     1\t# Plan\n     2\tDay one: Lisbon", {"path": "plan.md"})
    ).content
    assert "我读取了 plan.md（显示 2 行）。" in read and "# Plan" in read
    found = model.invoke(
        _after_tool("query_kb", json.dumps({"query": "refunds", "results": [{"title": "Refund policy"}]}))
    ).content
    assert "在知识库中搜索“refunds”，找到 1 条结果：“Refund policy”。" in found
    for english in ("I read", "The workdir", "Searching", "found"):
        assert english not in read + listing + found
    # The page's language never leaks into the next call: the default is still English.
    assert "3 entries" in OfflineChatModel().bind_tools(ALL).invoke(_after_tool("ls", "a\nb\nc")).content
