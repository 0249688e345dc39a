"""The reference index travels with the summary (issue 25) and yields first: a request at or above T
whose view fits below it without the index goes out without it, with no summary call and no state
change; one that does not fit even so is summarized as before (sync and async twins alike)."""

from __future__ import annotations

from langchain.agents.middleware import ExtendedModelResponse
from langchain_core.messages import AIMessage, HumanMessage

from context_engine.formats import REFERENCE_INDEX_HEADER, REFERENCE_INDEX_SEPARATOR
from context_engine.state import COMPACTION_HORIZON_KEY, SUMMARY_EVENT_KEY
from context_engine.store import MemoryStore
from context_engine.summary.history import build_summary_message, without_index
from context_engine.tokens.messages import estimate_message
from tests.context_engine.fakes import Handler, ScriptedChatModel, make_request
from tests.context_engine.middleware.support import MODES, call_mw, mw_config, mw_for, request_size

INDEX = (
    REFERENCE_INDEX_HEADER
    + "\n"
    + "\n".join(f"- TICKET-{n} L{n}" for n in range(1, 120))
    + "\n</reference_index>"
)


def _thread() -> tuple[list, dict]:
    messages = [HumanMessage(f"turn {n} " + "words " * 30, id=f"m{n}") for n in range(8)]
    messages += [AIMessage("noted", id="a8"), HumanMessage("and now?", id="m9")]
    summary = build_summary_message(
        "## SESSION INTENT\nwork", file_path="outputs/conversation_history/s.md", index=INDEX
    )
    event = {"cutoff_index": 2, "summary_message": summary, "file_path": "outputs/conversation_history/s.md"}
    return messages, {SUMMARY_EVENT_KEY: event}


def test_without_index_takes_only_the_index_out_of_the_summary_message():
    messages, state = _thread()
    view = [state[SUMMARY_EVENT_KEY]["summary_message"], *messages[2:]]
    lean = without_index(view)
    assert lean[0].content + REFERENCE_INDEX_SEPARATOR + INDEX == view[0].content
    assert lean[1:] == view[1:] and without_index(lean) is lean
    assert estimate_message(lean[0]) < estimate_message(view[0])


@MODES
async def test_a_view_that_fits_without_its_index_goes_out_without_it_and_no_summary(mode):
    messages, state = _thread()
    probe = mw_for(mw_config(10_000_000, keep=2))
    full = request_size(probe, make_request([state[SUMMARY_EVENT_KEY]["summary_message"], *messages[2:]]))
    lean = request_size(
        probe, make_request(without_index([state[SUMMARY_EVENT_KEY]["summary_message"], *messages[2:]]))
    )
    assert lean < full
    model, handler = ScriptedChatModel(), Handler()
    mw = mw_for(mw_config((lean + full) // 2, keep=2), MemoryStore(), model)
    response = await call_mw(mw, make_request(messages, state=state, model=model), handler, mode)
    assert isinstance(response, ExtendedModelResponse) and not model.summary_prompts
    assert response.command.update[COMPACTION_HORIZON_KEY]["lean"]  # and stays so until the next event
    assert REFERENCE_INDEX_HEADER not in handler.sent[0].content and handler.sent[1:] == messages[2:]


@MODES
async def test_a_view_over_t_even_without_its_index_is_summarized(mode):
    messages, state = _thread()
    model, handler = ScriptedChatModel(), Handler()
    mw = mw_for(mw_config(200, keep=2), MemoryStore(), model)
    response = await call_mw(mw, make_request(messages, state=state, model=model), handler, mode)
    assert isinstance(response, ExtendedModelResponse) and len(model.summary_prompts) == 1
