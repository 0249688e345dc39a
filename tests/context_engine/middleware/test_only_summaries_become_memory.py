"""Only a summary becomes memory, on the automatic path: a run whose summary call answers an HTML page,
a JSON body, a refusal, a summary cut off mid-way or an error's text goes on with the folded messages'
extractive summary, labelled so (issue 37), and none of that text reaches any message; a repair call
that fails or answers no summary keeps the valid first summary."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from langchain.agents.middleware import ModelResponse
from langchain_core.messages import HumanMessage

from context_engine.state import SESSION_ID_KEY, SUMMARY_EVENT_KEY
from context_engine.store import MemoryStore
from tests.context_engine.chats import SUMMARY
from tests.context_engine.fakes import (
    Handler,
    ScriptedChatModel,
    Verbatim,
    conversation,
    make_request,
    statuses,
)
from tests.context_engine.middleware.support import MODES, call_mw, history_files, mw_config
from tests.context_engine.summary.bad_summaries import BAD_SUMMARIES

FACTS = HumanMessage("Spec at https://example.com/spec/v2?rev=3&lang=en for ticket ABC-1234.", id="facts")


def _mw(config, store, model):
    from context_engine.middleware import CompressionMiddleware

    return CompressionMiddleware(
        config=config, store=store, summary_model=model, now=lambda: datetime(2026, 1, 1, tzinfo=UTC)
    )


@MODES
@pytest.mark.parametrize("kind", list(BAD_SUMMARIES))
async def test_a_run_whose_summary_is_no_summary_goes_on_with_a_labelled_extractive_one(mode, kind):
    messages = conversation(6)
    model = ScriptedChatModel(summaries=[Verbatim(BAD_SUMMARIES[kind])])
    events, handler, store = [], Handler(), MemoryStore()
    response = await call_mw(
        _mw(mw_config(1000, keep=4), store, model), make_request(messages, events=events), handler, mode
    )

    assert not isinstance(response, ModelResponse)
    update = response.command.update
    memory = update[SUMMARY_EVENT_KEY]["summary_message"].content
    assert len(model.summary_prompts) == 1 and statuses(events) == ["started", "completed"]
    report = events[-1]["loss_report"]
    assert report["summary_kind"] == "extractive" and report["refusal"]["code"] == "not_a_summary"
    assert "BEGIN-0" in memory  # the folded messages' own identifiers
    for message in handler.sent:
        assert BAD_SUMMARIES[kind][:40] not in str(message.content)
    assert len(history_files(store)) == 1 and update[SESSION_ID_KEY]


def test_the_same_run_with_a_valid_summary_stores_it():  # the control: the setup above can succeed
    model, store = ScriptedChatModel(summaries=[Verbatim(SUMMARY)]), MemoryStore()
    result = _mw(mw_config(1000, keep=4), store, model).wrap_model_call(
        make_request(conversation(6)), Handler()
    )
    assert SUMMARY in result.command.update[SUMMARY_EVENT_KEY]["summary_message"].content
    assert len(history_files(store)) == 1


@MODES
@pytest.mark.parametrize(
    "repair", [RuntimeError("upstream 502"), Verbatim(BAD_SUMMARIES["refusal"]), Verbatim("")], ids=str
)
async def test_a_failed_repair_call_keeps_the_valid_first_summary(mode, repair):
    first = SUMMARY  # loses the URL and ticket id of FACTS, so the repair pass runs
    model = ScriptedChatModel(summaries=[Verbatim(first), repair])
    config = mw_config(1000, keep=4, repair_pass=True)
    store = MemoryStore()
    result = await call_mw(
        _mw(config, store, model), make_request([FACTS, *conversation(6)[1:]]), Handler(), mode
    )

    assert len(model.summary_prompts) == 2  # the repair was asked for
    event = result.command.update[SUMMARY_EVENT_KEY]
    assert first in event["summary_message"].content
    assert len(history_files(store)) == 1
