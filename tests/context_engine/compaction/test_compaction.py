"""Deterministic compaction: offload decision, safe names, receipts, write-once, failure semantics."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.compaction.tool_results import (
    compact_messages,
    is_saved,
    safe_tool_file_name,
    tool_result_path,
    tool_result_text,
)
from context_engine.formats import TOOL_RESULT_SAVED_KEY
from context_engine.tokens.messages import estimate_text

BIG = "BEGIN " + "\n".join(f"row {i}: {'data ' * 8}" for i in range(400)) + " END"


def _conversation(result: str = BIG, *, name: str | None = "shell") -> list:
    return [
        HumanMessage("run it", id="h1"),
        AIMessage("", id="a1", tool_calls=[{"name": name or "shell", "args": {"cmd": "ls"}, "id": "call_1"}]),
        ToolMessage(result, id="t1", tool_call_id="call_1", name=name),
        AIMessage("done", id="a2"),
    ]


def test_large_tool_result_is_saved_and_replaced_by_a_receipt(config, store):
    messages = _conversation()
    result = compact_messages(messages, config=config, store=store)
    receipt = result.messages[2]
    digest = hashlib.sha256(BIG.encode()).hexdigest()
    path = f"outputs/large_tool_results/shell-{digest[:16]}.txt"
    assert store.files == {path: BIG}
    assert receipt.content.startswith(
        f"[Tool result saved]\nTool: shell\nApprox tokens: {estimate_text(BIG)}\nSHA-256: {digest}\n"
        f"Full output path: {path}\n\nOutput preview:\n[HEAD]\nBEGIN"
    )
    assert "[Truncated " in receipt.content and "END" in receipt.content
    assert (receipt.id, receipt.tool_call_id, receipt.name) == ("t1", "call_1", "shell")
    assert receipt.additional_kwargs[TOOL_RESULT_SAVED_KEY] is True
    assert [r.path for r in result.saved] == [path] and result.failed == ()


def test_only_the_tool_message_is_replaced_other_messages_are_the_same_objects(config, store):
    messages = _conversation()
    result = compact_messages(messages, config=config, store=store)
    assert result.messages is not messages
    assert [m is o for m, o in zip(result.messages, messages, strict=True)] == [True, True, False, True]
    assert messages[2].content == BIG  # the input is never mutated


def test_receipt_sha256_equals_the_saved_files_bytes(config, store):
    text = "结果 " * 3000 + "🙂 end"
    result = compact_messages(_conversation(text), config=config, store=store)
    (saved,) = result.saved
    file_bytes = store.files[saved.path].encode("utf-8")
    assert f"SHA-256: {hashlib.sha256(file_bytes).hexdigest()}" in result.messages[2].content
    assert saved.sha256 == hashlib.sha256(file_bytes).hexdigest()


def test_rerunning_compaction_writes_nothing_twice(config, store):
    messages = _conversation()
    first = compact_messages(messages, config=config, store=store)
    grown = [*messages, HumanMessage("next", id="h2")]
    second = compact_messages(grown, config=config, store=store)
    assert store.writes == 1
    assert second.messages[2].content == first.messages[2].content
    assert [s.written for s in first.saved + second.saved] == [True, False]


def test_an_already_compacted_view_is_returned_as_the_same_list(config, store):
    compacted = compact_messages(_conversation(), config=config, store=store).messages
    again = compact_messages(compacted, config=config, store=store)
    assert again.messages is compacted and not again.changed and store.writes == 1


def test_nothing_to_compact_returns_the_same_list_object(config, store):
    messages = _conversation("small output")
    result = compact_messages(messages, config=config, store=store)
    assert result.messages is messages and not result.changed and store.files == {}


def test_tool_result_is_not_replaced_when_write_fails(config, failing_store):
    messages = _conversation()
    result = compact_messages(messages, config=config, store=failing_store)
    assert result.messages is messages and result.messages[2].content == BIG
    (failure,) = result.failed
    assert failure.tool_call_id == "call_1" and "disk full" in failure.error
    assert failure.path.startswith("outputs/large_tool_results/shell-")


def test_missing_store_keeps_every_tool_result_whole(config):
    result = compact_messages(_conversation(), config=config, store=None)
    assert result.messages[2].content == BIG and len(result.failed) == 1


def test_limit_zero_offloads_every_tool_result_without_preview(config, store):
    messages = _conversation("tiny")
    result = compact_messages(messages, config=replace(config, tool_result_token_limit=0), store=store)
    content = result.messages[2].content
    assert "Output preview:" not in content and "tiny" not in content.split("Full output path:")[1]
    assert content.endswith("[Truncated 4 chars. Read the full output from the saved file.]")


def test_messages_already_marked_saved_are_never_written_again(config, store):
    marked = ToolMessage(BIG, id="t1", tool_call_id="call_1", additional_kwargs={TOOL_RESULT_SAVED_KEY: True})
    result = compact_messages([HumanMessage("x"), marked], config=config, store=store)
    assert store.writes == 0 and result.messages[1] is marked
    assert is_saved(marked)


def test_tool_name_falls_back_to_the_calling_ai_message(config, store):
    messages = _conversation(name=None)
    messages[1] = AIMessage("", id="a1", tool_calls=[{"name": "query_kb", "args": {}, "id": "call_1"}])
    result = compact_messages(messages, config=config, store=store)
    assert "Tool: query_kb" in result.messages[2].content
    assert result.saved[0].path.startswith("outputs/large_tool_results/query_kb-")


def test_existing_identical_file_is_not_rewritten(config, store):
    digest = hashlib.sha256(BIG.encode()).hexdigest()
    store.files[tool_result_path("shell", digest)] = BIG
    compact_messages(_conversation(), config=config, store=store)
    assert store.writes == 0


def test_text_blocks_are_saved_as_their_joined_text_and_mixed_blocks_as_json():
    assert tool_result_text([{"type": "text", "text": "a"}, "b"]) == "a\nb"
    mixed = [{"type": "text", "text": "a"}, {"type": "image", "url": "http://x/y.png"}]
    assert json.loads(tool_result_text(mixed)) == mixed


def test_text_blocks_with_annotations_are_saved_whole_and_byte_recoverable(config, store):
    # Joining would keep only the text and lose the citations: the saved file must hold everything.
    blocks = [
        {
            "type": "text",
            "text": "结果🙂 " * 600,
            "annotations": [{"type": "citation", "url": "https://a.example"}],
        },
        {"type": "text", "text": "tail", "id": "lc_block_1"},
    ]
    assert json.loads(tool_result_text(blocks)) == blocks
    result = compact_messages(_conversation(blocks), config=config, store=store)
    (saved,) = result.saved
    file_bytes = store.files[saved.path].encode("utf-8")
    assert json.loads(file_bytes) == blocks
    assert f"SHA-256: {hashlib.sha256(file_bytes).hexdigest()}" in result.messages[2].content


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("web_search", "web_search"),
        ("../../etc/x", "etc-x"),
        ("", "tool-result"),
        (None, "tool-result"),
        ("...", "tool-result"),
        ("/abs/path", "abs-path"),
        ("a/../b", "a-.-b"),
        ("名字", "tool-result"),
        ("mcp:server/tool name", "mcp-server-tool-name"),
        ("x" * 300, "x" * 64),
        ("evil\x00name\n", "evil-name"),
    ],
)
def test_unsafe_tool_names_give_safe_file_names(name, expected):
    assert safe_tool_file_name(name) == expected
    path = tool_result_path(name, "f" * 64)
    assert path == f"outputs/large_tool_results/{expected}-ffffffffffffffff.txt"
    assert ".." not in path and not path.startswith("/") and path.count("/") == 2


def test_structured_tool_result_gets_a_structured_preview(config, store, tavily_payloads):
    text = json.dumps(tavily_payloads[0], ensure_ascii=False)
    messages = _conversation(text, name="web_search")
    content = compact_messages(messages, config=replace(config, tool_result_token_limit=200), store=store)
    receipt = content.messages[2].content
    preview = receipt.split("Output preview:\n")[1].split("\n[Truncated")[0]
    data = json.loads(preview)
    assert data["kind"] == "web_search" and data["result_count"] == len(tavily_payloads[0]["results"])
    assert estimate_text(preview) <= 200


def test_a_state_grown_by_one_message_is_not_re_estimated_or_re_previewed(config, store, monkeypatch):
    from context_engine.compaction import previews
    from context_engine.compaction import tool_results as compaction

    calls: list[int] = []

    def counting(text, profile=compaction.DEFAULT_PROFILE):
        calls.append(len(text))
        return estimate_text(text, profile)

    messages = _conversation("unique output for the cache test " * 300)
    compact_messages(messages, config=config, store=store)
    monkeypatch.setattr(compaction, "estimate_text", counting)
    monkeypatch.setattr(previews, "estimate_text", counting)
    grown = [*messages, ToolMessage("new small result", tool_call_id="call_9", id="t9")]
    result = compact_messages(grown, config=config, store=store)
    assert calls == [len("new small result")]  # only the new message was estimated
    assert result.messages[2].content.startswith("[Tool result saved]") and store.writes == 1


def _read_round(n: int, text: str) -> list:
    call = {"id": f"read_{n}", "name": "read_file", "args": {"path": "outputs/large_tool_results/x.txt"}}
    return [
        AIMessage(content="", tool_calls=[call], id=f"ai_read_{n}"),
        ToolMessage(content=text, tool_call_id=f"read_{n}", name="read_file", id=f"tm_read_{n}"),
    ]


def test_an_unseen_read_file_result_stays_whole_so_saved_files_can_be_read_back(config, store):
    big = "saved line of output\n" * 400  # ~1,760 tokens: within a quarter of T
    messages = [HumanMessage(content="read it", id="h"), *_read_round(0, big)]
    result = compact_messages(messages, config=replace(config, trigger_tokens=8_000), store=store)
    assert result.messages[-1].content == big
    assert store.files == {}


def test_an_unseen_read_file_result_past_its_share_of_the_window_is_saved_in_the_same_turn(config, store):
    small = replace(config, trigger_tokens=2_000)  # a share of 500 tokens
    page = "saved line of output\n" * 60
    big = "saved line of output\n" * 400
    assert estimate_text(page) <= small.fresh_result_cap < estimate_text(big)
    messages = [HumanMessage(content="read it", id="h"), *_read_round(0, page), *_read_round(1, big)[1:]]
    messages[1] = AIMessage(
        content="", tool_calls=[*messages[1].tool_calls, *_read_round(1, big)[0].tool_calls]
    )
    result = compact_messages(messages, config=small, store=store)
    assert result.messages[2].content == page  # a page within its share: the model reads it back whole
    assert result.messages[3].content.startswith("[Tool result saved]")
    assert list(store.files.values()) == [big]


def test_unseen_read_file_results_past_their_batchs_share_are_saved(config, store):
    small = replace(config, trigger_tokens=2_000)  # 500 tokens a result, 1,000 the batch
    page = "saved line of output\n" * 60
    calls = [{"id": f"r{i}", "name": "read_file", "args": {"path": f"p{i}"}} for i in range(4)]
    messages = [
        AIMessage(content="", tool_calls=calls, id="a"),
        *(ToolMessage(content=page, tool_call_id=f"r{i}", name="read_file", id=f"t{i}") for i in range(4)),
    ]
    kept = [m.content == page for m in compact_messages(messages, config=small, store=store).messages[1:]]
    assert kept[0] and not kept[-1]  # the first pages stay whole while the batch has room


def test_a_read_file_result_the_model_has_answered_is_compacted(config, store):
    big = "saved line of output\n" * 400
    messages = [
        *_read_round(0, big),
        AIMessage(content="Read it.", id="answer"),
        HumanMessage(content="go on"),
    ]
    result = compact_messages(messages, config=config, store=store)
    assert result.messages[1].content.startswith("[Tool result saved]")


def test_other_unseen_tool_results_are_still_compacted(config, store):
    big = "lorem ipsum " * 800
    call = {"id": "c1", "name": "query_kb", "args": {"query": "q"}}
    messages = [
        AIMessage(content="", tool_calls=[call], id="a"),
        ToolMessage(content=big, tool_call_id="c1", id="t"),
    ]
    result = compact_messages(messages, config=config, store=store)
    assert result.messages[-1].content.startswith("[Tool result saved]")


@settings(max_examples=60, deadline=None)
@given(
    words=st.integers(min_value=1, max_value=1500),
    limit=st.integers(min_value=1, max_value=400),
    name=st.sampled_from(["shell", "query_kb", "web_search", None]),
)
def test_compaction_never_makes_a_tool_result_bigger(words, limit, name):
    from context_engine.config import CompressionConfig
    from context_engine.store import MemoryStore
    from context_engine.tokens.messages import DEFAULT_PROFILE, estimate_message

    messages = _conversation(" ".join(f"row{i} value={i * 7}" for i in range(words)), name=name)
    config = CompressionConfig(trigger_tokens=4096, keep_messages=4, tool_result_token_limit=limit)
    result = compact_messages(messages, config=config, store=MemoryStore())
    before, after = messages[2], result.messages[2]
    assert estimate_message(after, DEFAULT_PROFILE) <= estimate_message(before, DEFAULT_PROFILE)
