"""The middleware's pinned messages, loss report, repair pass and spend guard (issue 14), called
directly with a ModelRequest, on the sync and async paths."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from langchain.agents.middleware import ExtendedModelResponse
from langchain_core.messages import AIMessage, HumanMessage

from context_engine.config import CompressionConfig, SpendLimits
from context_engine.formats import CONVERSATION_HISTORY_DIR
from context_engine.middleware import CompressionMiddleware
from context_engine.state import (
    PINNED_IDS_KEY,
    REPAIR_USAGE_KEY,
    SUMMARY_CALLS_KEY,
    SUMMARY_EVENT_KEY,
    SUMMARY_USAGE_KEY,
    TOKEN_USAGE_KEY,
)
from context_engine.store import MemoryStore
from context_engine.summary.cutoff import is_summary_message
from context_engine.summary.history import effective_messages
from context_engine.summary.spend_guard import REASON_CALLS
from tests.context_engine.chats import USAGE
from tests.context_engine.fakes import Handler, ScriptedChatModel, conversation, make_request, tool_turn

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
MODES = pytest.mark.parametrize("mode", ["sync", "async"])
FACTS = HumanMessage(
    "Spec at https://example.com/spec/v2 for ticket ABC-1234, file src/app/main.py.", id="facts"
)


def _mw(config: CompressionConfig, *, pins=(), model=None, store=None) -> CompressionMiddleware:
    return CompressionMiddleware(
        config=config,
        store=store if store is not None else MemoryStore(),
        summary_model=model or ScriptedChatModel(),
        now=lambda: NOW,
        pins=lambda: list(pins),
    )


def _config(trigger: int = 1500, **kw) -> CompressionConfig:
    return CompressionConfig(
        trigger_tokens=trigger, keep_messages=4, tool_result_token_limit=100, context_window=32_000, **kw
    )


async def _call(mw, request, handler, mode):
    if mode == "sync":
        return mw.wrap_model_call(request, handler)
    return await mw.awrap_model_call(request, handler.acall)


def _apply(state: dict, result) -> dict:
    if isinstance(result, ExtendedModelResponse) and result.command is not None:
        state = {**state, **{k: v for k, v in result.command.update.items() if k != "messages"}}
    return state


@MODES
async def test_a_pinned_tool_result_is_neither_compacted_nor_folded(mode):
    messages = conversation(6)
    model = ScriptedChatModel(summaries=["## SESSION INTENT\nresearch"])
    mw = _mw(_config(), pins=["tool-0"], model=model)
    events: list[dict] = []
    handler = Handler()
    result = await _call(mw, make_request(messages, events=events), handler, mode)

    sent = handler.sent
    assert is_summary_message(sent[0])
    assert [m.id for m in sent[1:3]] == ["ai-0", "tool-0"]  # the pin keeps its call, right after
    assert sent[2].content == messages[2].content  # verbatim: not a receipt
    assert "BEGIN-0" not in model.summary_prompts[0]  # never folded into the summary
    event = result.command.update[SUMMARY_EVENT_KEY]
    assert event[PINNED_IDS_KEY] == ["ai-0", "tool-0"]
    visible = effective_messages(messages, event)
    assert [m.id for m in visible[1:]] == [m.id for m in sent[1:]]
    completed = events[-1]
    assert completed["pinned_messages"] == 2 and completed["level"] == "summary"


@MODES
async def test_every_summary_event_carries_a_loss_report(mode):
    messages = [FACTS, *conversation(6)[1:]]
    events: list[dict] = []
    await _call(_mw(_config()), make_request(messages, events=events), Handler(), mode)
    report = events[-1]["loss_report"]
    assert report["total"] >= 3
    assert {"https://example.com/spec/v2", "ABC-1234", "src/app/main.py"} <= set(report["lost_identifiers"])
    assert report["repair_calls"] == 0 and report["repaired"] is False


@MODES
async def test_the_repair_pass_lists_what_was_lost_and_keeps_the_better_summary(mode):
    messages = [FACTS, *conversation(6)[1:]]
    model = ScriptedChatModel(
        summaries=[
            "## SESSION INTENT\nresearch",
            "## SESSION INTENT\nresearch https://example.com/spec/v2 ABC-1234 src/app/main.py",
        ],
        summary_usage=USAGE,
    )
    events: list[dict] = []
    result = await _call(
        _mw(_config(repair_pass=True), model=model), make_request(messages, events=events), Handler(), mode
    )
    assert len(model.summary_prompts) == 2
    assert "An earlier summary of these messages left out the identifiers below." in model.summary_prompts[1]
    assert "- ABC-1234" in model.summary_prompts[1]
    update = result.command.update
    assert "ABC-1234" in update[SUMMARY_EVENT_KEY]["summary_message"].content
    report = events[-1]["loss_report"]
    assert report["repaired"] is True and report["repair_calls"] == 1
    assert "ABC-1234" not in report["lost_identifiers"]
    assert len(update[SUMMARY_CALLS_KEY]) == 2  # both calls count against the spend guard
    assert update[TOKEN_USAGE_KEY][SUMMARY_USAGE_KEY]["calls"] == 2
    # The repair call's usage is in the totals and, on its own, under "repair": its cost stays visible.
    usage = events[-1]["summary_usage"]
    assert usage["input_tokens"] == 2 * USAGE["input_tokens"]
    assert usage[REPAIR_USAGE_KEY] == USAGE


def test_a_repair_that_is_no_better_keeps_the_first_summary_and_none_runs_when_nothing_is_lost():
    messages = [FACTS, *conversation(6)[1:]]
    model = ScriptedChatModel(summaries=["## SESSION INTENT\nfirst", "## SESSION INTENT\nsecond"])
    result = _mw(_config(repair_pass=True), model=model).wrap_model_call(make_request(messages), Handler())
    assert "first" in result.command.update[SUMMARY_EVENT_KEY]["summary_message"].content
    plain = conversation(6)
    # A saved tool-result file the view does not name is not one read away (issue 24): nothing is
    # lost only when the summary keeps the identifiers of the results it folds.
    model = ScriptedChatModel(
        summaries=["## SESSION INTENT\n" + " ".join(f"BEGIN-{i} END-{i}" for i in range(6))]
    )
    _mw(_config(repair_pass=True), model=model).wrap_model_call(make_request(plain), Handler())
    assert len(model.summary_prompts) == 1


@MODES
async def test_the_spend_guard_holds_a_summary_back_and_the_request_goes_out_compacted(mode):
    messages = conversation(6)
    model = ScriptedChatModel()
    ledger = [{"at": (NOW - timedelta(minutes=5)).isoformat(), "input_tokens": 900}]
    events: list[dict] = []
    handler = Handler()
    result = await _call(
        _mw(_config(spend=SpendLimits(max_calls_per_hour=1)), model=model),
        make_request(messages, state={SUMMARY_CALLS_KEY: ledger}, events=events),
        handler,
        mode,
    )
    assert model.summary_prompts == []
    assert not is_summary_message(handler.sent[0]) and len(handler.sent) == len(messages)  # compacted only
    assert not isinstance(result, ExtendedModelResponse)  # no state change
    assert events[-1]["level"] == "compaction" and events[-1]["spend_guard"]["reason"] == REASON_CALLS


def _loop(limits: SpendLimits, calls: int = 10) -> int:
    """An agent loop whose every step returns a tool result (~4K tokens, never offloaded here) that
    alone exceeds the 1,500-token trigger: each call is above T even right after a summary."""
    config = CompressionConfig(
        trigger_tokens=1500,
        keep_messages=4,
        tool_result_token_limit=100_000,
        context_window=200_000,
        spend=limits,
    )
    model = ScriptedChatModel()
    mw = _mw(config, model=model)
    state: dict = {}
    messages = [HumanMessage("Read every chapter.", id="h-0")]
    for step in range(calls):
        messages = [*messages, *tool_turn(step, name="fetch", content="chapter " + "x " * 4000)]
        state = _apply(state, mw.wrap_model_call(make_request(messages, state=state), Handler()))
    return len(model.summary_prompts)


def test_no_summary_loop_when_the_kept_tail_alone_exceeds_the_trigger():
    assert _loop(SpendLimits()) == 10  # unguarded: a summary on every call, the loop users report
    assert _loop(SpendLimits(max_calls_per_hour=3)) == 3
    assert 1 <= _loop(SpendLimits(max_input_tokens_per_hour=10_000)) <= 3  # ~4K tokens of input each


@MODES
async def test_when_held_back_and_over_the_window_the_oldest_unpinned_messages_are_dropped(mode):
    store = MemoryStore()
    messages = [HumanMessage("Pinned rule: reply in French.", id="rule"), *conversation(12, size=3000)[1:]]
    config = CompressionConfig(
        trigger_tokens=1500,
        keep_messages=4,
        tool_result_token_limit=100_000,  # nothing is offloaded: compaction cannot help
        context_window=4000,
        spend=SpendLimits(max_calls_per_hour=1),
    )
    model = ScriptedChatModel()
    ledger = [{"at": (NOW - timedelta(minutes=1)).isoformat(), "input_tokens": 10}]
    events: list[dict] = []
    handler = Handler()
    result = await _call(
        _mw(config, pins=["rule"], model=model, store=store),
        make_request(messages, state={SUMMARY_CALLS_KEY: ledger}, events=events),
        handler,
        mode,
    )
    assert model.summary_prompts == []
    sent = handler.sent
    assert is_summary_message(sent[0]) and "earlier messages were removed from this view" in sent[0].content
    assert sent[1].id == "rule"  # pinned: kept, right after the note
    assert sent[-1].id == messages[-1].id
    history = [p for p in store.files if p.startswith(CONVERSATION_HISTORY_DIR)]
    assert len(history) == 1 and "BEGIN-0" in store.files[history[0]]
    event = result.command.update[SUMMARY_EVENT_KEY]
    assert effective_messages(messages, event)[1].id == "rule"
    completed = events[-1]
    assert completed["dropped_messages"] > 0 and completed["spend_guard"]["reason"] == REASON_CALLS
    assert completed["loss_report"]["total"] >= 0
    assert SUMMARY_CALLS_KEY not in result.command.update  # no summary call was made
    assert AIMessage  # the module's imports stay in use
