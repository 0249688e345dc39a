"""CompressionMiddleware called directly with a ModelRequest: the flow of SPEC 6 step by step, with
equivalents of the reference system's summary-middleware acceptance cases (yuxi.md §7, items 1-26)."""

from __future__ import annotations

import hashlib
import json

import pytest
from langchain.agents.middleware import ExtendedModelResponse, ModelResponse
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from compression.agent_middleware import CompressionError, CompressionMiddleware
from compression.engine.config import CompressionConfig
from compression.engine.formats import (
    CONVERSATION_HISTORY_DIR,
    LARGE_TOOL_RESULTS_DIR,
    RECEIPT_HEADER,
    TOOL_RESULT_SAVED_KEY,
    TRUNCATED_ARG_SUFFIX,
)
from compression.engine.history import SESSION_ID_KEY, SUMMARY_EVENT_KEY, effective_messages
from compression.engine.store import MemoryStore
from compression.engine.tokens import estimate_messages, estimate_text, profile_for_model
from tests.compression._agent_fakes import (
    Handler,
    ScriptedChatModel,
    conversation,
    make_request,
    statuses,
    tool_turn,
)

WINDOW = 32_000


def _config(
    trigger: int, *, keep: int = 4, limit: int = 100, window: int | None = WINDOW, **kw
) -> CompressionConfig:
    return CompressionConfig(
        trigger_tokens=trigger, keep_messages=keep, tool_result_token_limit=limit, context_window=window, **kw
    )


def _middleware(config: CompressionConfig, store=None, model=None) -> CompressionMiddleware:
    return CompressionMiddleware(
        config=config,
        store=store if store is not None else MemoryStore(),
        summary_model=model or ScriptedChatModel(),
    )


def _size(mw: CompressionMiddleware, request) -> int:
    return estimate_messages(
        request.messages, system=request.system_message, tools=request.tools, profile=mw.profile
    )


def _history_files(store: MemoryStore) -> list[str]:
    return [p for p in store.files if p.startswith(CONVERSATION_HISTORY_DIR)]


def _result_files(store: MemoryStore) -> list[str]:
    return [p for p in store.files if p.startswith(LARGE_TOOL_RESULTS_DIR)]


async def _call(mw, request, handler, mode):
    if mode == "sync":
        return mw.wrap_model_call(request, handler)
    return await mw.awrap_model_call(request, handler.acall)


MODES = pytest.mark.parametrize("mode", ["sync", "async"])


# --- below T -------------------------------------------------------------------------------------


@MODES
async def test_below_trigger_sends_the_same_message_objects_with_no_files_and_no_events(mode):
    messages = conversation(3)
    store, events, handler = MemoryStore(), [], Handler()
    mw = _middleware(_config(1_000_000), store)
    request = make_request(messages, events=events)
    response = await _call(mw, request, handler, mode)
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
    mw = _middleware(_config(1024), store, model)
    response = mw.wrap_model_call(make_request(messages, events=events), handler)
    assert isinstance(response, ModelResponse)
    assert handler.sent == messages and model.summary_prompts == [] and store.writes == 0 and events == []


def test_below_trigger_sends_raw_tool_text_and_writes_nothing():  # yuxi 15
    messages = conversation(2, size=3000)
    store, handler = MemoryStore(), Handler()
    _middleware(_config(1_000_000, limit=10), store).wrap_model_call(make_request(messages), handler)
    assert handler.sent[2].content == messages[2].content and "BEGIN-0" in handler.sent[2].content
    assert store.writes == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_no_events_when_below_trigger(mode):  # yuxi 22
    events = []
    await _call(
        _middleware(_config(1_000_000)), make_request(conversation(1), events=events), Handler(), mode
    )
    assert events == []


# --- compaction only -----------------------------------------------------------------------------


@MODES
async def test_compaction_only_calls_no_summary_and_emits_started_completed(mode):  # yuxi 14a, 16
    messages = conversation(4)
    store, model, events, handler = MemoryStore(), ScriptedChatModel(), [], Handler()
    mw = _middleware(_config(3000, keep=20), store, model)
    request = make_request(messages, events=events)
    before = _size(mw, request)
    assert before >= 3000
    response = await _call(mw, request, handler, mode)
    assert isinstance(response, ModelResponse)  # no state update
    assert model.summary_prompts == [] and _history_files(store) == []
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
    is summarized; one token less does neither."""
    messages = conversation(4)
    size = _size(_middleware(_config(1)), make_request(messages))
    for trigger, expected in ((size + 1, []), (size, ["started", "completed"])):
        events = []
        await _call(
            _middleware(_config(trigger, keep=20)), make_request(messages, events=events), Handler(), mode
        )
        assert statuses(events) == expected, trigger
    after = events[-1]["after_tokens"]
    assert events[-1]["level"] == "compaction" and after < size

    for trigger, summaries in ((after + 1, 0), (after, 1)):
        model, events = ScriptedChatModel(), []
        mw = _middleware(_config(trigger, keep=20), model=model)
        await _call(mw, make_request(messages, events=events), Handler(), mode)
        assert len(model.summary_prompts) == summaries, trigger
        assert events[-1]["level"] == ("summary" if summaries else "compaction")


def test_compaction_replaces_only_the_tool_message_and_names_its_file():  # yuxi 4
    messages = [HumanMessage("find", id="h"), *tool_turn(0, name="query_kb", content="x" * 9000)]
    messages.append(HumanMessage("go on", id="h2"))
    store, handler = MemoryStore(), Handler()
    _middleware(_config(500, keep=20), store).wrap_model_call(make_request(messages), handler)
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
    _middleware(_config(300, keep=20, limit=limit), store).wrap_model_call(make_request(messages), handler)
    (path,) = _result_files(store)
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
    _middleware(_config(1000, keep=20), failing_store).wrap_model_call(
        make_request(messages, events=events), handler
    )
    assert handler.sent[2].content == messages[2].content  # never trimmed without a saved copy
    failed = events[-1]["failed_files"]
    assert [f["tool"] for f in failed] == ["web_search", "web_search"] and "disk full" in failed[0]["error"]


def test_tool_result_stays_whole_without_a_store():  # yuxi 7
    messages = conversation(1)
    events, handler = [], Handler()
    mw = CompressionMiddleware(config=_config(500, keep=20), store=None, summary_model=ScriptedChatModel())  # type: ignore[arg-type]
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
    _middleware(_config(500, keep=20, limit=120)).wrap_model_call(make_request(messages), handler)
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
    _middleware(_config(500, keep=20)).wrap_model_call(make_request(messages), handler)
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
    mw = _middleware(_config(1000, keep=20), store)
    mw.wrap_model_call(make_request(messages), handler)
    writes = store.writes
    for receipt in (m for m in handler.sent if isinstance(m, ToolMessage)):
        lines = dict(line.split(": ", 1) for line in receipt.content.splitlines()[1:5])
        saved = store.files[lines["Full output path"]].encode("utf-8")
        assert hashlib.sha256(saved).hexdigest() == lines["SHA-256"]
    # Same state again, a fresh middleware (no memo), and a state grown by one message: no rewrite.
    _middleware(_config(1000, keep=20), store).wrap_model_call(make_request(messages), Handler())
    mw.wrap_model_call(make_request([*messages, AIMessage("thinking", id="a-new")]), Handler())
    assert store.writes == writes


# --- summaries -----------------------------------------------------------------------------------


@MODES
async def test_summary_updates_state_through_a_command_and_emits_started_completed(mode):  # yuxi 12, 21
    messages = conversation(6)
    store, model, events, handler = MemoryStore(), ScriptedChatModel(), [], Handler()
    mw = _middleware(_config(1000, keep=4), store, model)
    response = await _call(mw, make_request(messages, events=events), handler, mode)
    assert isinstance(response, ExtendedModelResponse)
    update = response.command.update
    assert "messages" not in update  # messages are never deleted or rewritten
    event = update[SUMMARY_EVENT_KEY]
    assert isinstance(event["cutoff_index"], int) and 0 < event["cutoff_index"] < len(messages)
    assert event["file_path"] == f"{CONVERSATION_HISTORY_DIR}/{update[SESSION_ID_KEY]}.md"
    assert update["_summary_events"] == [None]
    assert len(model.summary_prompts) == 1 and _history_files(store) == [event["file_path"]]
    assert statuses(events) == ["started", "completed"]
    completed = events[-1]
    assert completed["type"] == "compression" and completed["level"] == "summary"
    assert completed["cutoff_index"] == event["cutoff_index"] and completed["file_path"] == event["file_path"]
    # What the model saw: the summary message, then the preserved tail (system prompt unchanged).
    sent = handler.sent
    assert sent[0] is event["summary_message"] and "summarized" in sent[0].content
    assert [m.id for m in sent[1:]] == [m.id for m in messages[event["cutoff_index"] :]]
    assert handler.requests[-1].system_message.content == make_request([]).system_message.content
    assert completed["after_tokens"] == _size(mw, handler.requests[-1])  # yuxi 13: what was sent


def test_summary_prompt_and_history_hold_receipts_not_raw_results():  # yuxi 14b, 19, 20
    messages = conversation(6)
    store, model = MemoryStore(), ScriptedChatModel()
    _middleware(_config(1000, keep=4), store, model).wrap_model_call(make_request(messages), Handler())
    (prompt,) = model.summary_prompts
    assert RECEIPT_HEADER in prompt and "word150 " not in prompt
    (history,) = _history_files(store)
    text = store.files[history]
    assert text.startswith("## Summarized at ") and RECEIPT_HEADER in text and LARGE_TOOL_RESULTS_DIR in text
    assert "word150 " not in text


def test_offload_limit_zero_offloads_every_tool_result_before_the_summary():  # yuxi 14c
    messages = conversation(6, size=600)
    store, model, handler = MemoryStore(), ScriptedChatModel(), Handler()
    _middleware(_config(600, keep=4, limit=0), store, model).wrap_model_call(make_request(messages), handler)
    assert len(_result_files(store)) == 6
    assert "word50" not in model.summary_prompts[0]
    assert all("Output preview" not in m.content for m in handler.sent if isinstance(m, ToolMessage))


def test_custom_summary_prompt_is_used():  # yuxi 2
    messages = conversation(6)
    model = ScriptedChatModel()
    config = _config(1000, keep=4, summary_prompt="CUSTOM PROMPT. Summarize:\n{messages}")
    _middleware(config, model=model).wrap_model_call(make_request(messages), Handler())
    assert model.summary_prompts[0].startswith("CUSTOM PROMPT.") and "web_search" in model.summary_prompts[0]


def test_a_later_call_rebuilds_from_the_original_preserved_messages():  # yuxi 18
    messages = conversation(6)
    mw = _middleware(_config(1000, keep=4))
    first = mw.wrap_model_call(make_request(messages), Handler())
    state = dict(first.command.update)
    event = state[SUMMARY_EVENT_KEY]
    grown = [*messages, *tool_turn(9, name="fetch", content="fresh small result")]
    handler = Handler()
    _middleware(_config(1_000_000)).wrap_model_call(make_request(grown, state=state), handler)
    sent = handler.sent
    assert sent[0] is event["summary_message"]
    assert sent[1:] == grown[event["cutoff_index"] :]
    assert all(
        a is b for a, b in zip(sent[1:], grown[event["cutoff_index"] :], strict=True)
    )  # uncompacted originals
    assert sent[-1].content == "fresh small result"


def test_a_second_summary_stores_the_global_cutoff():
    messages = conversation(6)
    store, model = MemoryStore(), ScriptedChatModel(summaries=["first summary", "second summary"])
    mw = _middleware(_config(1000, keep=4), store, model)
    state = dict(mw.wrap_model_call(make_request(messages), Handler()).command.update)
    first = state[SUMMARY_EVENT_KEY]
    grown = list(messages)
    for i in range(10, 14):
        grown += tool_turn(i, name="web_search", content=f"BEGIN-{i} " + "data " * 900)
    handler = Handler()
    second_update = mw.wrap_model_call(make_request(grown, state=state), handler).command.update
    second = second_update[SUMMARY_EVENT_KEY]
    local = [m.id for m in handler.requests[-1].messages[1:]]
    assert second["cutoff_index"] > first["cutoff_index"]
    # The global cutoff indexes state messages: what is kept is exactly what the model saw after the summary.
    assert [m.id for m in grown[second["cutoff_index"] :]] == local
    assert effective_messages(grown, second)[0].content.endswith("<summary>\nsecond summary\n</summary>")
    assert second_update[SESSION_ID_KEY] == state[SESSION_ID_KEY]  # one history file per session
    assert second_update["_summary_events"] == [None, first]
    assert second_update["token_usage"]["summary_model_usage"]["calls"] == 2
    assert "first summary" not in store.files[second["file_path"]].split("## Summarized at ")[2]


# --- overflow -------------------------------------------------------------------------------------


@MODES
async def test_overflow_below_trigger_forces_a_summary_and_retries(mode):  # yuxi 23
    messages = conversation(6, size=600)
    events, handler = [], Handler(ContextOverflowError("prompt is too long"), AIMessage("fine"))
    model = ScriptedChatModel()
    mw = _middleware(_config(1_000_000, keep=4, limit=1_000_000), model=model)
    response = await _call(mw, make_request(messages, events=events), handler, mode)
    assert len(handler.requests) == 2 and isinstance(response, ExtendedModelResponse)
    assert statuses(events) == ["started", "completed"] and events[-1]["level"] == "summary"
    assert len(model.summary_prompts) == 1
    assert response.model_response.result[0].content == "fine"


def test_overflow_clips_a_too_large_final_tool_batch_and_persists_it_with_the_same_ids():
    big = [*tool_turn(20, name="fetch", content="x " * 6000)]
    messages = [*conversation(6, size=300), *big]
    store, handler = MemoryStore(), Handler(ContextOverflowError("too long"), AIMessage("ok"))
    mw = _middleware(_config(1_000_000, keep=4, limit=100_000), store)
    response = mw.wrap_model_call(make_request(messages), handler)
    replaced = response.command.update["messages"]
    assert [m.id for m in replaced] == ["tool-20"] and replaced[0].tool_call_id == "call_20"
    assert RECEIPT_HEADER in replaced[0].content and handler.sent[-1].content == replaced[0].content


@MODES
async def test_error_after_started_emits_failed_and_propagates(mode):  # yuxi 24
    events = []
    handler = Handler(ValueError("provider exploded"))
    with pytest.raises(ValueError, match="provider exploded"):
        await _call(
            _middleware(_config(1000, keep=20)), make_request(conversation(3), events=events), handler, mode
        )
    assert statuses(events) == ["started", "failed"] and "provider exploded" in events[-1]["error"]


# --- failures are closed for state -----------------------------------------------------------------


class _HistoryFailingStore(MemoryStore):
    def append_text(self, path: str, content: str) -> None:
        raise OSError("disk full")


def _assert_failed_closed(response, handler, events, messages):
    assert isinstance(response, ModelResponse)  # no Command: state unchanged
    assert statuses(events) == ["started", "failed"] and events[-1]["level"] == "summary"
    for message in handler.sent:
        assert "disk full" not in str(message.content) and "boom" not in str(message.content)
        assert not message.additional_kwargs.get("lc_source")
    assert [m.id for m in handler.sent] == [m.id for m in messages]  # the compacted view, whole


@MODES
async def test_history_write_failure_changes_no_state_and_continues_on_the_compacted_view(mode):  # yuxi 25
    messages = conversation(6)
    model, events, handler = ScriptedChatModel(), [], Handler()
    mw = _middleware(_config(1000, keep=4), _HistoryFailingStore(), model)
    response = await _call(mw, make_request(messages, events=events), handler, mode)
    _assert_failed_closed(response, handler, events, messages)
    assert model.summary_prompts == [] and "disk full" in events[-1]["error"]


@MODES
@pytest.mark.parametrize("failure", ["model_error", "empty_summary"])
async def test_summary_failure_changes_no_state(mode, failure):  # yuxi 26
    messages = conversation(6)
    summaries = [RuntimeError("boom")] if failure == "model_error" else ["   \n"]
    model, events, handler = ScriptedChatModel(summaries=summaries), [], Handler()
    mw = _middleware(_config(1000, keep=4), MemoryStore(), model)
    response = await _call(mw, make_request(messages, events=events), handler, mode)
    _assert_failed_closed(response, handler, events, messages)
    assert ("boom" if failure == "model_error" else "empty") in events[-1]["error"]


def test_summary_failure_with_a_view_too_large_for_the_window_raises_a_clear_error():
    messages = conversation(6, size=6000)
    events, handler = [], Handler()
    mw = _middleware(_config(1000, keep=4, limit=100_000, window=2000), _HistoryFailingStore())
    with pytest.raises(CompressionError, match="does not fit the model's context window"):
        mw.wrap_model_call(make_request(messages, events=events), handler)
    assert handler.requests == [] and statuses(events) == ["started", "failed"]


# --- warm calls -----------------------------------------------------------------------------------


def test_warm_calls_reuse_compaction_and_estimates_for_unchanged_messages(monkeypatch):
    import compression.agent_middleware.memo as memo

    seen: list[int] = []
    real = memo.compact_messages

    def counting(messages, **kwargs):
        seen.append(len(messages))
        return real(messages, **kwargs)

    monkeypatch.setattr(memo, "compact_messages", counting)
    messages = conversation(8)
    mw = _middleware(_config(6000, keep=50))
    first = Handler()
    mw.wrap_model_call(make_request(messages), first)
    grown = [*messages, *tool_turn(30, name="fetch", content="y " * 2000)]
    second = Handler()
    mw.wrap_model_call(make_request(grown), second)
    assert seen == [len(messages), 2]  # only the new turn (from its AIMessage) is compacted again
    fresh = Handler()
    _middleware(_config(6000, keep=50)).wrap_model_call(make_request(grown), fresh)
    assert [m.content for m in second.sent] == [m.content for m in fresh.sent]
    assert all(a is b for a, b in zip(second.sent[: len(messages)], first.sent, strict=True))


def test_a_read_file_result_is_shown_whole_until_answered_then_compacted_on_a_warm_call():
    big = "a saved line of tool output\n" * 600
    messages = [
        *conversation(4),
        *tool_turn(40, name="read_file", content=big, args={"path": "outputs/x.txt"}),
    ]
    mw = _middleware(_config(3000, keep=50))
    first = Handler()
    mw.wrap_model_call(make_request(messages), first)
    assert first.sent[-1].content == big  # unseen: the model reads the saved file back whole
    grown = [*messages, AIMessage(content="I read it.", id="ans"), HumanMessage(content="next", id="nx")]
    second = Handler()
    mw.wrap_model_call(make_request(grown), second)
    read = next(m for m in second.sent if getattr(m, "tool_call_id", None) and m.id == messages[-1].id)
    assert read.content.startswith("[Tool result saved]")
