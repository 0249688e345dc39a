"""CompressionMiddleware called directly: summaries, provider overflows, failures that leave state
untouched, and warm calls (SPEC 6 steps 4-7; yuxi.md §7 acceptance cases)."""

from __future__ import annotations

import pytest
from langchain.agents.middleware import ExtendedModelResponse, ModelResponse
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.errors import CompressionError
from context_engine.formats import (
    CONVERSATION_HISTORY_DIR,
    LARGE_TOOL_RESULTS_DIR,
    RECEIPT_HEADER,
)
from context_engine.state import SESSION_ID_KEY, SUMMARY_CALLS_KEY, SUMMARY_EVENT_KEY
from context_engine.store import MemoryStore
from context_engine.summary.history import effective_messages
from tests.context_engine.chats import as_summary
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

# --- summaries -----------------------------------------------------------------------------------


@MODES
async def test_summary_updates_state_through_a_command_and_emits_started_completed(mode):  # yuxi 12, 21
    messages = conversation(6)
    store, model, events, handler = MemoryStore(), ScriptedChatModel(), [], Handler()
    mw = mw_for(mw_config(1000, keep=4), store, model)
    response = await call_mw(mw, make_request(messages, events=events), handler, mode)
    assert isinstance(response, ExtendedModelResponse)
    update = response.command.update
    assert "messages" not in update  # messages are never deleted or rewritten
    event = update[SUMMARY_EVENT_KEY]
    assert isinstance(event["cutoff_index"], int) and 0 < event["cutoff_index"] < len(messages)
    assert event["file_path"] == f"{CONVERSATION_HISTORY_DIR}/{update[SESSION_ID_KEY]}.md"
    assert update["_summary_events"] == [None]
    assert len(model.summary_prompts) == 1 and history_files(store) == [event["file_path"]]
    assert statuses(events) == ["started", "completed"]
    completed = events[-1]
    assert completed["type"] == "compression" and completed["level"] == "summary"
    assert completed["cutoff_index"] == event["cutoff_index"] and completed["file_path"] == event["file_path"]
    # What the model saw: the summary message, then the preserved tail (system prompt unchanged).
    sent = handler.sent
    assert sent[0] is event["summary_message"] and "summarized" in sent[0].content
    assert [m.id for m in sent[1:]] == [m.id for m in messages[event["cutoff_index"] :]]
    assert handler.requests[-1].system_message.content == make_request([]).system_message.content
    assert completed["after_tokens"] == request_size(mw, handler.requests[-1])  # yuxi 13: what was sent


def test_summary_prompt_and_history_hold_receipts_not_raw_results():  # yuxi 14b, 19, 20
    messages = conversation(6)
    store, model = MemoryStore(), ScriptedChatModel()
    mw_for(mw_config(1000, keep=4), store, model).wrap_model_call(make_request(messages), Handler())
    (prompt,) = model.summary_prompts
    assert RECEIPT_HEADER in prompt and "word150 " not in prompt
    (history,) = history_files(store)
    text = store.files[history]
    assert text.startswith("## Summarized at ") and RECEIPT_HEADER in text and LARGE_TOOL_RESULTS_DIR in text
    assert "word150 " not in text


def test_offload_limit_zero_offloads_every_tool_result_before_the_summary():  # yuxi 14c
    messages = conversation(6, size=600)
    store, model, handler = MemoryStore(), ScriptedChatModel(), Handler()
    mw_for(mw_config(600, keep=4, limit=0), store, model).wrap_model_call(make_request(messages), handler)
    assert len(result_files(store)) == 6
    assert "word50" not in model.summary_prompts[0]
    assert all("Output preview" not in m.content for m in handler.sent if isinstance(m, ToolMessage))


def test_custom_summary_prompt_is_used():  # yuxi 2
    messages = conversation(6)
    model = ScriptedChatModel()
    config = mw_config(1000, keep=4, summary_prompt="CUSTOM PROMPT. Summarize:\n{messages}")
    mw_for(config, model=model).wrap_model_call(make_request(messages), Handler())
    assert model.summary_prompts[0].startswith("CUSTOM PROMPT.") and "web_search" in model.summary_prompts[0]


def test_a_later_call_keeps_the_summary_requests_kept_tail_as_it_went_out():  # yuxi 18, issue 40
    """The kept tail goes out as the summary request showed it (its receipts are never re-rendered,
    nor reverted to the raw results): the next request repeats that one and only adds at its end."""
    messages = conversation(6)
    mw, summarized = mw_for(mw_config(1000, keep=4)), Handler()
    first = mw.wrap_model_call(make_request(messages), summarized)
    state = dict(first.command.update)
    event = state[SUMMARY_EVENT_KEY]
    grown = [*messages, *tool_turn(9, name="fetch", content="fresh small result")]
    handler = Handler()
    mw_for(mw_config(1_000_000)).wrap_model_call(make_request(grown, state=state), handler)
    sent = handler.sent
    assert sent[0] is event["summary_message"]
    assert [m.id for m in sent[1:]] == [m.id for m in grown[event["cutoff_index"] :]]
    assert sent[: len(summarized.sent)] == summarized.sent  # the prefix is the summary request's
    assert any(RECEIPT_HEADER in str(m.content) for m in sent)  # receipts stay receipts
    assert sent[-1].content == "fresh small result"


def test_a_second_summary_stores_the_global_cutoff():
    messages = conversation(6)
    store, model = MemoryStore(), ScriptedChatModel(summaries=["first summary", "second summary"])
    mw = mw_for(mw_config(1000, keep=4), store, model)
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
    summary = as_summary("second summary")
    assert effective_messages(grown, second)[0].content.endswith(f"<summary>\n{summary}\n</summary>")
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
    mw = mw_for(mw_config(1_000_000, keep=4, limit=1_000_000), model=model)
    response = await call_mw(mw, make_request(messages, events=events), handler, mode)
    assert len(handler.requests) == 2 and isinstance(response, ExtendedModelResponse)
    assert statuses(events) == ["started", "completed"] and events[-1]["level"] == "summary"
    assert len(model.summary_prompts) == 1
    assert response.model_response.result[0].content == "fine"


def test_overflow_clips_a_too_large_final_tool_batch_and_persists_it_with_the_same_ids():
    big = [*tool_turn(20, name="fetch", content="x " * 6000)]
    messages = [*conversation(6, size=300), *big]
    store, handler = MemoryStore(), Handler(ContextOverflowError("too long"), AIMessage("ok"))
    mw = mw_for(mw_config(1_000_000, keep=4, limit=100_000), store)
    response = mw.wrap_model_call(make_request(messages), handler)
    replaced = response.command.update["messages"]
    assert [m.id for m in replaced] == ["tool-20"] and replaced[0].tool_call_id == "call_20"
    assert RECEIPT_HEADER in replaced[0].content and handler.sent[-1].content == replaced[0].content


@MODES
async def test_error_after_started_emits_failed_and_propagates(mode):  # yuxi 24
    events = []
    handler = Handler(ValueError("provider exploded"))
    with pytest.raises(ValueError, match="provider exploded"):
        await call_mw(
            mw_for(mw_config(1000, keep=20)), make_request(conversation(3), events=events), handler, mode
        )
    assert statuses(events) == ["started", "failed"] and "provider exploded" in events[-1]["error_detail"]
    assert events[-1]["error"] == "The summary call to the model failed."  # what the pages show


# --- failures are closed for state -----------------------------------------------------------------


class _HistoryFailingStore(MemoryStore):
    def append_text(self, path: str, content: str) -> None:
        raise OSError("disk full")


def _assert_failed_closed(response, handler, events, messages):
    # No state change but the spend guard's ledger: the failed call was billed (issue 24).
    assert isinstance(response, ExtendedModelResponse) and isinstance(response.model_response, ModelResponse)
    assert list(response.command.update) == [SUMMARY_CALLS_KEY]
    assert len(response.command.update[SUMMARY_CALLS_KEY]) == 1
    assert statuses(events) == ["started", "failed"] and events[-1]["level"] == "summary"
    for message in handler.sent:
        assert "disk full" not in str(message.content) and "boom" not in str(message.content)
        assert not message.additional_kwargs.get("lc_source")
    assert [m.id for m in handler.sent] == [m.id for m in messages]  # the compacted view, whole


@MODES
async def test_history_write_failure_changes_no_state_and_continues_on_the_compacted_view(mode):  # yuxi 25
    messages = conversation(6)
    model, events, handler = ScriptedChatModel(), [], Handler()
    mw = mw_for(mw_config(1000, keep=4), _HistoryFailingStore(), model)
    response = await call_mw(mw, make_request(messages, events=events), handler, mode)
    _assert_failed_closed(response, handler, events, messages)
    # The summary comes first, its history section after: a failed summary never leaves a section.
    assert len(model.summary_prompts) == 1 and "disk full" in events[-1]["error_detail"]
    assert events[-1]["error"] == "A file could not be saved in the thread's workdir."


# A summary call that fails (a refused answer, an empty one or an error's text, is replaced by the
# extractive summary instead: ``test_only_summaries_become_memory``).
FAILED_SUMMARIES = {
    "model_error": (RuntimeError("boom"), "boom"),
    "provider_error": (
        RuntimeError("Error code: 429 - {'error': {'code': 'rate_limit_exceeded'}}"),
        "rate_limit_exceeded",
    ),
}


@MODES
@pytest.mark.parametrize("failure", list(FAILED_SUMMARIES))
async def test_summary_failure_changes_no_state(mode, failure):  # yuxi 26
    messages = conversation(6)
    summary, reported = FAILED_SUMMARIES[failure]
    model, events, handler, store = ScriptedChatModel(summaries=[summary]), [], Handler(), MemoryStore()
    mw = mw_for(mw_config(1000, keep=4), store, model)
    response = await call_mw(mw, make_request(messages, events=events), handler, mode)
    _assert_failed_closed(response, handler, events, messages)
    assert reported in events[-1]["error_detail"]
    assert (
        "Error" not in events[-1]["error"] and "429" not in events[-1]["error"]
    )  # no class, no provider text
    assert not [path for path in store.files if "conversation_history" in path]  # no section left behind


def test_summary_failure_with_a_view_too_large_for_the_window_raises_a_clear_error():
    messages = conversation(6, size=6000)
    events, handler = [], Handler()
    mw = mw_for(mw_config(1000, keep=4, limit=100_000, window=2000), _HistoryFailingStore())
    with pytest.raises(CompressionError, match="does not fit the model's context window"):
        mw.wrap_model_call(make_request(messages, events=events), handler)
    assert handler.requests == [] and statuses(events) == ["started", "failed"]


# --- warm calls -----------------------------------------------------------------------------------


def test_warm_calls_reuse_compaction_and_estimates_for_unchanged_messages(monkeypatch):
    import context_engine.middleware.memo as memo

    seen: list[int] = []
    real = memo.compact_messages

    def counting(messages, **kwargs):
        seen.append(len(messages))
        return real(messages, **kwargs)

    monkeypatch.setattr(memo, "compact_messages", counting)
    messages = conversation(8)
    mw = mw_for(mw_config(6000, keep=50, low_water_percent=0))
    first = Handler()
    mw.wrap_model_call(make_request(messages), first)
    grown = [*messages, *tool_turn(30, name="fetch", content="y " * 2000)]
    second = Handler()
    mw.wrap_model_call(make_request(grown), second)
    assert seen == [len(messages), 2]  # only the new turn (from its AIMessage) is compacted again
    fresh = Handler()
    mw_for(mw_config(6000, keep=50, low_water_percent=0)).wrap_model_call(make_request(grown), fresh)
    assert [m.content for m in second.sent] == [m.content for m in fresh.sent]
    # The first request's messages go out again as they did (a receipt made at arrival equals the
    # one the memo makes once the result is answered: made once, never rendered otherwise).
    assert second.sent[: len(messages)] == first.sent


def test_a_read_file_result_is_shown_whole_until_answered_then_compacted_on_a_warm_call():
    big = "a saved line of tool output\n" * 100  # a page within its share: a quarter of T
    messages = [
        *conversation(4),
        *tool_turn(40, name="read_file", content=big, args={"path": "outputs/x.txt"}),
    ]
    mw = mw_for(mw_config(3000, keep=50))
    first = Handler()
    mw.wrap_model_call(make_request(messages), first)
    assert first.sent[-1].content == big  # unseen: the model reads the saved file back whole
    grown = [*messages, AIMessage(content="I read it.", id="ans"), HumanMessage(content="next", id="nx")]
    second = Handler()
    mw.wrap_model_call(make_request(grown), second)
    read = next(m for m in second.sent if getattr(m, "tool_call_id", None) and m.id == messages[-1].id)
    assert read.content.startswith("[Tool result saved]")
