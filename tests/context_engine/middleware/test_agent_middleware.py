"""CompressionMiddleware called directly with a ModelRequest: the flow of SPEC 6 step by step, with
equivalents of the reference system's summary-middleware acceptance cases (yuxi.md §7, items 1-26)."""

from __future__ import annotations

import hashlib
import json

import pytest
from langchain.agents.middleware import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.formats import (
    LARGE_TOOL_RESULTS_DIR,
    RECEIPT_HEADER,
    TOOL_RESULT_SAVED_KEY,
    TRUNCATED_ARG_SUFFIX,
)
from context_engine.middleware import CompressionMiddleware
from context_engine.state import COMPACTION_HORIZON_KEY
from context_engine.store import MemoryStore
from context_engine.tokens.messages import estimate_text, profile_for_model
from tests.context_engine.fakes import (
    Handler,
    ScriptedChatModel,
    conversation,
    make_request,
    statuses,
    tool_turn,
)
from tests.context_engine.middleware.support import (
    MODES,
    call_mw,
    history_files,
    mw_config,
    mw_for,
    request_size,
    result_files,
)

# --- below T -------------------------------------------------------------------------------------


@MODES
async def test_below_trigger_sends_the_same_message_objects_with_no_files_and_no_events(mode):
    messages = conversation(3)
    store, events, handler = MemoryStore(), [], Handler()
    mw = mw_for(mw_config(1_000_000), store)
    request = make_request(messages, events=events)
    response = await call_mw(mw, request, handler, mode)
    assert isinstance(response, ModelResponse)
    assert handler.requests == [request]  # not even a copy of the request
    assert all(a is b for a, b in zip(handler.sent, messages, strict=True))
    assert store.files == {} and store.writes == 0
    assert events == []


def test_provider_reported_usage_does_not_trigger_compression():  # yuxi 3
    messages = [
        HumanMessage("hi", id="h"),
        AIMessage(
            "hello",
            id="a",
            usage_metadata={"input_tokens": 199_000, "output_tokens": 1000, "total_tokens": 200_000},
        ),
        HumanMessage("and now?", id="h2"),
    ]
    store, model, events, handler = MemoryStore(), ScriptedChatModel(), [], Handler()
    mw = mw_for(mw_config(1024), store, model)
    response = mw.wrap_model_call(make_request(messages, events=events), handler)
    assert isinstance(response, ModelResponse)
    assert handler.sent == messages and model.summary_prompts == [] and store.writes == 0 and events == []


def test_below_trigger_sends_raw_tool_text_and_writes_nothing():  # yuxi 15
    messages = conversation(2, size=3000)
    store, handler = MemoryStore(), Handler()
    mw_for(mw_config(1_000_000, limit=10), store).wrap_model_call(make_request(messages), handler)
    assert handler.sent[2].content == messages[2].content and "BEGIN-0" in handler.sent[2].content
    assert store.writes == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_no_events_when_below_trigger(mode):  # yuxi 22
    events = []
    await call_mw(mw_for(mw_config(1_000_000)), make_request(conversation(1), events=events), Handler(), mode)
    assert events == []


# --- compaction only -----------------------------------------------------------------------------


@MODES
async def test_compaction_only_calls_no_summary_and_emits_started_completed(mode):  # yuxi 14a, 16
    messages = conversation(4)
    store, model, events, handler = MemoryStore(), ScriptedChatModel(), [], Handler()
    mw = mw_for(mw_config(3000, keep=20), store, model)
    request = make_request(messages, events=events)
    before = request_size(mw, request)
    assert before >= 3000
    response = await call_mw(mw, request, handler, mode)
    # The only state written: the compaction horizon (issue 40), no messages, no summary.
    assert isinstance(response, ExtendedModelResponse)
    assert set(response.command.update) == {COMPACTION_HORIZON_KEY}
    assert model.summary_prompts == [] and history_files(store) == []
    assert statuses(events) == ["started", "completed"]
    completed = events[-1]
    assert completed["level"] == "compaction" and completed["before_tokens"] == before
    assert completed["after_tokens"] < 3000 and len(completed["saved_files"]) == 4
    sent = handler.sent
    assert all(
        RECEIPT_HEADER in m.content and "Truncated" in m.content for m in sent if isinstance(m, ToolMessage)
    )
    assert not any("word150 " in str(m.content) for m in sent)  # the raw payload never reaches the model
    assert "END-0" in messages[2].content  # state is untouched


@MODES
async def test_both_trigger_comparisons_are_at_or_above(mode):
    """SPEC 6 steps 2 and 4: an estimate equal to ``T`` compacts, and a compacted view equal to ``T``
    is summarized; one token less does neither. (Low-water mark 0: compaction goes as far as it can,
    so the compacted view compared with ``T`` is the whole compaction.)"""
    messages = conversation(4)
    size = request_size(mw_for(mw_config(1)), make_request(messages))
    for trigger, expected in ((size + 1, []), (size, ["started", "completed"])):
        events = []
        await call_mw(
            mw_for(mw_config(trigger, keep=20, low_water_percent=0)),
            make_request(messages, events=events),
            Handler(),
            mode,
        )
        assert statuses(events) == expected, trigger
    after = events[-1]["after_tokens"]
    assert events[-1]["level"] == "compaction" and after < size

    for trigger, summaries in ((after + 1, 0), (after, 1)):
        model, events = ScriptedChatModel(), []
        mw = mw_for(mw_config(trigger, keep=20, low_water_percent=0), model=model)
        await call_mw(mw, make_request(messages, events=events), Handler(), mode)
        assert len(model.summary_prompts) == summaries, trigger
        assert events[-1]["level"] == ("summary" if summaries else "compaction")


def test_compaction_replaces_only_the_tool_message_and_names_its_file():  # yuxi 4
    messages = [HumanMessage("find", id="h"), *tool_turn(0, name="query_kb", content="x" * 9000)]
    messages.append(HumanMessage("go on", id="h2"))
    store, handler = MemoryStore(), Handler()
    mw_for(mw_config(500, keep=20), store).wrap_model_call(make_request(messages), handler)
    sent = handler.sent
    assert [a is b for a, b in zip(sent, messages, strict=True)] == [True, True, False, True]
    digest = hashlib.sha256(messages[2].content.encode()).hexdigest()
    assert list(store.files) == [f"{LARGE_TOOL_RESULTS_DIR}/query_kb-{digest[:16]}.txt"]
    receipt = sent[2].content
    assert RECEIPT_HEADER in receipt and "Tool: query_kb" in receipt and "Full output path:" in receipt
    assert "[HEAD]" in receipt
    assert sent[2].id == messages[2].id and sent[2].tool_call_id == messages[2].tool_call_id
    assert sent[2].additional_kwargs[TOOL_RESULT_SAVED_KEY] is True


@pytest.mark.parametrize("limit", [40, 0])
def test_large_tool_result_is_written_whole_and_the_preview_is_limited(limit):  # yuxi 5
    body = "BEGIN " + "lorem ipsum dolor sit amet " * 300 + " END"
    messages = [
        HumanMessage("q", id="h"),
        *tool_turn(0, name="fetch", content=body),
        HumanMessage("more", id="h2"),
    ]
    store, handler = MemoryStore(), Handler()
    mw_for(mw_config(300, keep=20, limit=limit), store).wrap_model_call(make_request(messages), handler)
    (path,) = result_files(store)
    assert store.files[path] == body
    receipt = handler.sent[2].content
    assert "Truncated" in receipt
    if limit:
        preview = receipt.split("Output preview:\n", 1)[1].rsplit("\n[Truncated", 1)[0]
        assert estimate_text(preview, profile_for_model(None)) <= limit
        assert "[HEAD]" in preview and "[MIDDLE]" in preview
        assert "[TAIL]" in preview and "BEGIN" in preview and "END" in preview
    else:
        assert "Output preview:" not in receipt and "lorem" not in receipt


def test_tool_result_stays_whole_when_its_file_cannot_be_written(failing_store):  # yuxi 6
    messages = conversation(2)
    events, handler = [], Handler()
    mw_for(mw_config(1000, keep=20), failing_store).wrap_model_call(
        make_request(messages, events=events), handler
    )
    assert handler.sent[2].content == messages[2].content  # never trimmed without a saved copy
    failed = events[-1]["failed_files"]
    assert [f["tool"] for f in failed] == ["web_search", "web_search"] and "disk full" in failed[0]["error"]


def test_tool_result_stays_whole_without_a_store():  # yuxi 7
    messages = conversation(1)
    events, handler = [], Handler()
    mw = CompressionMiddleware(config=mw_config(500, keep=20), store=None, summary_model=ScriptedChatModel())  # type: ignore[arg-type]
    mw.wrap_model_call(make_request(messages, events=events), handler)
    assert handler.sent[2].content == messages[2].content
    assert "no result store" in events[-1]["failed_files"][0]["error"]


def _kb_payload() -> str:
    results = [
        {
            "id": f"chunk-{i}",
            "kb_id": "kb-7",
            "file_id": f"file-{i}",
            "title": f"Doc {i}",
            "score": 0.9 - i / 100,
            "content": "body text " * 80,
            "metadata": {"source": "a.pdf", "chunk_index": i, "score": 0.5, "host_path": "/srv/secret/a.pdf"},
        }
        for i in range(6)
    ]
    return json.dumps({"kb_id": "kb-7", "query": "q", "results": results})


@pytest.mark.parametrize("bare_list", [False, True])
def test_structured_preview_keeps_identity_fields_through_the_middleware(bare_list):  # yuxi 8, 10
    payload = _kb_payload()
    if bare_list:
        payload = json.dumps(json.loads(payload)["results"])
    messages = [
        HumanMessage("q", id="h"),
        *tool_turn(0, name="query_kb", content=payload),
        HumanMessage("n", id="h2"),
    ]
    handler = Handler()
    mw_for(mw_config(500, keep=20, limit=120)).wrap_model_call(make_request(messages), handler)
    preview = json.loads(handler.sent[2].content.split("Output preview:\n", 1)[1].split("\n[Truncated", 1)[0])
    assert preview["kind"] == "knowledge_base" and preview["result_count"] == 6
    first = preview["results"][0]
    assert first["id"] == "chunk-0" and first["file_id"] == "file-0"
    assert "host_path" not in json.dumps(preview)


def test_write_file_arguments_are_truncated_in_the_view_only():  # yuxi 17
    long_text = "A" * 5000
    raw_args = json.dumps({"path": "notes.md", "content": long_text})
    call = {"name": "write_file", "args": {"path": "notes.md", "content": long_text}, "id": "w1"}
    ai = AIMessage(
        content="",
        tool_calls=[call],
        additional_kwargs={
            "tool_calls": [
                {"id": "w1", "type": "function", "function": {"name": "write_file", "arguments": raw_args}}
            ]
        },
        id="ai-w",
    )
    messages = [
        HumanMessage("write it", id="h"),
        ai,
        ToolMessage("ok", tool_call_id="w1", name="write_file", id="t"),
    ]
    handler = Handler()
    mw_for(mw_config(500, keep=20)).wrap_model_call(make_request(messages), handler)
    sent_ai = handler.sent[1]
    assert sent_ai.tool_calls[0]["args"]["content"].endswith(TRUNCATED_ARG_SUFFIX)
    raw_sent = sent_ai.additional_kwargs["tool_calls"][0]["function"]["arguments"]
    assert TRUNCATED_ARG_SUFFIX in raw_sent and long_text not in raw_sent
    assert ai.tool_calls[0]["args"]["content"] == long_text
    assert ai.additional_kwargs["tool_calls"][0]["function"]["arguments"] == raw_args


def test_receipt_sha256_equals_the_saved_file_bytes_and_rerunning_writes_nothing_twice():
    messages = conversation(3)
    store = MemoryStore()
    handler = Handler()
    mw = mw_for(mw_config(1000, keep=20), store)
    mw.wrap_model_call(make_request(messages), handler)
    writes = store.writes
    for receipt in (m for m in handler.sent if isinstance(m, ToolMessage)):
        lines = dict(line.split(": ", 1) for line in receipt.content.splitlines()[1:5])
        saved = store.files[lines["Full output path"]].encode("utf-8")
        assert hashlib.sha256(saved).hexdigest() == lines["SHA-256"]
    # Same state again, a fresh middleware (no memo), and a state grown by one message: no rewrite.
    mw_for(mw_config(1000, keep=20), store).wrap_model_call(make_request(messages), Handler())
    mw.wrap_model_call(make_request([*messages, AIMessage("thinking", id="a-new")]), Handler())
    assert store.writes == writes
